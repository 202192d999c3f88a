/// Why a command stopped, and the exit status that tells scripts which kind of failure it was.
struct CommandFailure: Error, CustomStringConvertible {
    enum Kind {
        /// The command line is wrong (exit 2): nothing was opened or changed.
        case usage
        /// The command line was fine but the work failed (exit 1): not found, a database from a
        /// newer release, a migration or database error.
        case runtime
    }

    var kind: Kind
    var message: String

    static func usage(_ message: String) -> CommandFailure { CommandFailure(kind: .usage, message: message) }
    static func runtime(_ message: String) -> CommandFailure { CommandFailure(kind: .runtime, message: message) }

    var exitStatus: Int32 {
        switch kind {
        case .usage: ExitStatus.usageError
        case .runtime: ExitStatus.runtimeError
        }
    }

    var description: String { message }
}
