import Dispatch
import Foundation
import Testing

@testable import SyncServer

/// A handler's answer sent later, from another thread, while its request waits without a thread.
@Suite("HTTP server: deferred responses")
struct DeferredResponseTests {
    /// A server with one polling thread whose `/wait` requests are answered only when the test says,
    /// and whose other requests are answered at once.
    private static func server(_ pending: Locked<[DeferredResponse]>) throws -> HTTPServer {
        var configuration = HTTPServer.Configuration(threads: 1)
        configuration.runsOffPollingThread = { _ in false }
        return try HTTPServer(
            configuration: configuration,
            replying: { request in
                guard request.path == "/wait" else { return .response(.text("now")) }
                let later = DeferredResponse()
                pending.withLock { $0.append(later) }
                return .deferred(later)
            })
    }

    /// Twenty deferred requests on a server with one thread: each other request is answered at
    /// once meanwhile, and each deferred one gets what was sent for it.
    @Test func deferredRequestsHoldUpNoOtherRequest() throws {
        let pending = Locked<[DeferredResponse]>([])
        let server = try Self.server(pending)
        defer { server.stop() }
        let waiting = try (0..<20).map { _ in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest("GET", "/wait")
            return connection
        }
        #expect(eventually { pending.value.count == 20 })
        let other = try RawHTTPConnection(port: server.port)
        try other.sendRequest("GET", "/")
        #expect(try other.readResponse(timeout: .seconds(2)).text == "now")
        for (index, later) in pending.value.enumerated() {
            if index.isMultiple(of: 2) {
                later.send(.text("late \(index)"))
            } else {
                // Work that blocks runs on a handler thread, not the caller's.
                later.send(computing: { .text("computed \(index)") })
            }
        }
        for (index, connection) in waiting.enumerated() {
            let expected = index.isMultiple(of: 2) ? "late \(index)" : "computed \(index)"
            #expect(try connection.readResponse(timeout: .seconds(5)).text == expected)
        }
    }

    /// Only the first answer counts, and one sent before the HTTP layer has suspended the
    /// connection is delivered all the same.
    @Test func theFirstAnswerCountsEvenWhenSentBeforeTheConnectionWasSuspended() throws {
        let server = try HTTPServer(
            configuration: .init(threads: 1),
            replying: { _ in
                let later = DeferredResponse()
                later.send(.text("early"))
                later.send(.text("ignored"))
                return .deferred(later)
            })
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/")
        #expect(try connection.readResponse(timeout: .seconds(5)).text == "early")
    }

    /// `stop` waits for deferred answers (they are bounded by whoever deferred them) and closes only
    /// then: no connection is left suspended.
    @Test func stopWaitsForDeferredAnswers() throws {
        let pending = Locked<[DeferredResponse]>([])
        let server = try Self.server(pending)
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/wait")
        #expect(eventually { pending.value.count == 1 })
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) { pending.value[0].send(.text("before stopping")) }
        #expect(server.stop(gracePeriod: .seconds(5)))
        #expect(try connection.readResponse(timeout: .seconds(5)).text == "before stopping")
    }
}
