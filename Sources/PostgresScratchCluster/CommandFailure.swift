/// A command that exited with a non-zero status, with what it wrote.
public struct CommandFailure: Error, CustomStringConvertible {
    public let command: String
    public let status: Int32
    public let error: String
    public var description: String { "\(command) exited with \(status): \(error)" }

    public init(command: String, status: Int32, error: String) {
        self.command = command
        self.status = status
        self.error = error
    }
}
