import Foundation
import SyncProtocol

/// The libcurl client is the engine's transport: the POST goes out on a reused handle of its
/// pool (one per request in flight, ``HTTPClient/Configuration/maxConcurrentRequests``),
/// a network fault becomes a ``SyncError`` of kind `transport` (retryable when curl says the
/// fault is passing), and `Retry-After` is read from the answer.
extension HTTPClient: SyncTransport {
    public var maxConcurrentRequests: Int { max(1, configuration.maxConcurrentRequests) }

    public func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        try post(url, headers: headers, body: body, isCancelled: nil)
    }

    public func post(
        _ url: URL, headers: [(String, String)], body: Data, cancelledWhen isCancelled: @escaping @Sendable () -> Bool
    ) throws(SyncError) -> TransportReply {
        try post(url, headers: headers, body: body, isCancelled: isCancelled)
    }

    private func post(
        _ url: URL, headers: [(String, String)], body: Data, isCancelled: (@Sendable () -> Bool)?
    ) throws(SyncError) -> TransportReply {
        var fields = HTTPHeaders()
        for (name, value) in headers { fields[name] = value }
        let response: HTTPClientResponse
        do {
            response = try send(
                HTTPClientRequest(method: .post, url: url, headers: fields, body: body), cancelledWhen: isCancelled)
        } catch {
            throw SyncError(.transport, error.description, isRetryable: error.isRetryable)
        }
        let retryAfter = response.retryAfter().map { duration in
            Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        }
        return TransportReply(status: response.status, body: response.body, retryAfterSeconds: retryAfter)
    }
}
