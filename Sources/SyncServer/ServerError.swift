/// Errors of the server's own work (storage, configuration, administration), as opposed to
/// protocol answers to clients (``SyncProtocol/ErrorBody``). Each says what to do next.
///
/// ```swift
/// do { try storage.createDataset("work") } catch let error as ServerError where error.kind == .conflict { … }
/// ```
public struct ServerError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// A name or option the operator gave is not acceptable.
        case invalidArgument
        /// The dataset or token named does not exist.
        case notFound
        /// The dataset or token already exists, or the dataset or token is past what was asked
        /// (a token already revoked, a dataset at a higher major than an allowance names).
        case conflict
        /// The storage failed (the underlying error is in the message).
        case storage
        /// The storage cannot be reached now; the request may be retried.
        case unavailable
        case crypto
    }

    public var kind: Kind
    public var message: String
    public var fix: String?

    public init(_ kind: Kind, _ message: String, fix: String? = nil) {
        self.kind = kind
        self.message = message
        self.fix = fix
    }

    public var description: String { fix.map { "\(message); \($0)" } ?? message }
}

extension ServerError {
    /// Runs `body`; a ``ServerError`` it throws passes through, any other error becomes a storage
    /// failure of `what` (the storages' wrapper for work that raises no protocol refusals).
    static func narrowing<Output>(_ what: String, _ body: () throws -> Output) throws(ServerError) -> Output {
        do {
            return try body()
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(.storage, "\(what) failed: \(error)")
        }
    }
}
