/// The tool's exit statuses, documented in `--help`.
enum ExitStatus {
    static let success: Int32 = 0
    static let runtimeError: Int32 = 1
    static let usageError: Int32 = 2
}
