import Foundation

/// Messages for the user that are not the command's output: errors and progress go to stderr so
/// that stdout stays parseable (an id alone on a line, JSON).
enum StandardError {
    static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// An error line in the usual `tool: message` form.
    static func report(_ message: String) {
        write("reminders: \(message)\n")
    }

    /// Whether stderr is a terminal, where a `\r`-updated line makes sense; in a pipe or a log
    /// file it would only be noise.
    static var isTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}
