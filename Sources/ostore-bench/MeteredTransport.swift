import Foundation
import SyncClient

/// The engine's libcurl transport with a meter: how long the engine waited inside requests (the
/// request going out, the server's work, the answer coming back) and each request's body sizes in
/// both directions, so the benchmark can split a sync's time between the server and the client
/// and have the C reference move the same bytes.
///
/// `@unchecked Sendable`: `waited` and `exchanges` are only read and written between
/// `lock.lock()` and `lock.unlock()`; `client` is itself `Sendable`.
final class MeteredTransport: SyncTransport, @unchecked Sendable {
    /// One request: its body and its answer's body, in bytes (as the engine sent and received them).
    struct Exchange: Codable {
        var sent: Int
        var received: Int
    }

    private let client: HTTPClient
    private let lock = NSLock()
    private var waited: UInt64 = 0
    private var exchanges: [Exchange] = []

    init(_ client: HTTPClient) {
        self.client = client
    }

    var maxConcurrentRequests: Int { client.maxConcurrentRequests }

    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        let start = DispatchTime.now().uptimeNanoseconds
        let reply = try client.post(url, headers: headers, body: body)
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        lock.withLock {
            waited += elapsed
            exchanges.append(Exchange(sent: body.count, received: reply.body.count))
        }
        return reply
    }

    /// Milliseconds spent inside requests so far, summed over requests (two pushes in flight count
    /// the time they overlap twice).
    var waitedMilliseconds: Double { lock.withLock { Double(waited) / 1e6 } }
    var recorded: [Exchange] { lock.withLock { exchanges } }
}
