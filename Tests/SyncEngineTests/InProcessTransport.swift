import Foundation
import SyncClient
import SyncProtocol
import SyncServer
import TestSupport

/// A transport that hands each request straight to a `SyncService`, no network: the engine's
/// logic tested against the real handlers and storage. `failNext` makes the next requests fail
/// as a network fault would.
final class InProcessTransport: SyncTransport, @unchecked Sendable {
    // @unchecked Sendable: `failures` is only touched under `lock`; `service` is Sendable.
    let service: SyncService
    private let lock = NSLock()
    private var failures = 0
    private var requests: [String] = []

    init(service: SyncService) { self.service = service }

    func failNext(_ count: Int) { lock.withLock { failures = count } }
    /// The service answers requests on any thread, several at once.
    var maxConcurrentRequests: Int { 2 }
    var paths: [String] { lock.withLock { requests } }

    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        try post(url, headers: headers, body: body, cancelledWhen: { false })
    }

    func post(
        _ url: URL, headers: [(String, String)], body: Data, cancelledWhen isCancelled: @escaping @Sendable () -> Bool
    ) throws(SyncError) -> TransportReply {
        let fail = lock.withLock {
            requests.append(url.path)
            defer { failures = max(failures - 1, 0) }
            return failures > 0
        }
        if fail { throw SyncError(.transport, "connection refused (simulated)", isRetryable: true) }
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        guard
            let response = service.handle(
                HTTPRequest(method: "POST", path: url.path, headers: fields, body: body), cancelledWhen: isCancelled)
        else { throw SyncError(.transport, "the request was given up", isRetryable: false) }
        return TransportReply(
            status: response.status.rawValue, body: response.body,
            retryAfterSeconds: response.headers["Retry-After"].flatMap(Double.init))
    }
}

/// A server's storage with the dataset `family` and a read-write token, in `directory`: what the
/// engine tests talk to through an ``InProcessTransport``.
struct InProcessDataset {
    let storage: SQLiteSyncStorage
    let token: String
    let transport: InProcessTransport

    /// - Parameter name: the server's directory in `directory`, one per server of a test.
    init(
        in directory: TemporaryDirectory, named name: String = "server", limits: Limits = .standard,
        pushOrderWait: Duration = .seconds(2)
    ) throws {
        storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path(name)))
        try storage.createDataset(named: "family")
        token = try storage.createToken(dataset: "family", readOnly: false).secret
        transport = InProcessTransport(
            service: SyncService(storage: storage, limits: limits, pushOrderWait: pushOrderWait))
    }
}
