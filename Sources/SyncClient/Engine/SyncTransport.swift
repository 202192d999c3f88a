import Foundation

/// How the engine reaches the server: one POST with headers and a body, one answer. The
/// libcurl ``HTTPClient`` is the transport apps use; a test may answer in-process.
public protocol SyncTransport: Sendable {
    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply
    /// ``post(_:headers:body:)``, given up once `isCancelled` returns true (a live pull the engine
    /// no longer waits for): a ``SyncError`` then, soon. A transport that cannot give a request
    /// up answers it as `post` does.
    func post(
        _ url: URL, headers: [(String, String)], body: Data, cancelledWhen isCancelled: @escaping @Sendable () -> Bool
    )
        throws(SyncError) -> TransportReply
    /// How many `post` calls it runs at once; the engine has no more pushes in flight than this
    /// (``SyncEngine/Configuration/pushesInFlight``). 1 unless the transport says otherwise.
    var maxConcurrentRequests: Int { get }
}

extension SyncTransport {
    public var maxConcurrentRequests: Int { 1 }

    public func post(
        _ url: URL, headers: [(String, String)], body: Data, cancelledWhen isCancelled: @escaping @Sendable () -> Bool
    ) throws(SyncError) -> TransportReply {
        try post(url, headers: headers, body: body)
    }
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
