import Foundation

/// How the engine reaches the server: one POST with headers and a body, one answer. The
/// libcurl ``HTTPClient`` is the transport apps use; a test may answer in-process.
public protocol SyncTransport: Sendable {
    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply
    /// How many `post` calls it runs at once; the engine has no more pushes in flight than this
    /// (``SyncEngine/Configuration/pushesInFlight``). 1 unless the transport says otherwise.
    var maxConcurrentRequests: Int { get }
}

extension SyncTransport {
    public var maxConcurrentRequests: Int { 1 }
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
