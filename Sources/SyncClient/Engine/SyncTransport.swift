import Foundation

/// How the engine reaches the server: one POST with headers and a body, one answer. The
/// libcurl ``HTTPClient`` is the transport apps use; a test may answer in-process.
public protocol SyncTransport: Sendable {
    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply
}

/// An HTTP answer as the engine needs it.
public struct TransportReply: Sendable {
    public var status: Int
    public var body: Data
    /// `Retry-After` in seconds, when the server sent one.
    public var retryAfterSeconds: Double?

    public init(status: Int, body: Data, retryAfterSeconds: Double? = nil) {
        self.status = status
        self.body = body
        self.retryAfterSeconds = retryAfterSeconds
    }
}
