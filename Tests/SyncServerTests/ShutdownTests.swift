import Dispatch
import Foundation
import Testing

@testable import SyncServer

@Suite struct ShutdownTests {
    @Test func stopLetsAnInFlightRequestFinish() throws {
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let server = try HTTPServer { request in
            if request.path == "/slow" {
                started.signal()
                _ = proceed.wait(timeout: .now() + 5)
                usleep(100_000)
            }
            return .text("done")
        }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/slow")
        #expect(started.wait(timeout: .now() + 5) == .success)

        let stopped = Locked<Bool?>(nil)
        let stopper = DispatchGroup()
        DispatchQueue.global().async(group: stopper) {
            stopped.value = server.stop(gracePeriod: .seconds(5))
        }
        #expect(eventually { !server.isRunning })
        // While the request is in flight, new connections are refused at once.
        #expect(throws: RawHTTPError.self) { _ = try RawHTTPConnection(port: server.port) }
        #expect(server.requestsInFlight == 1)
        proceed.signal()

        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "done")
        #expect(response.headers["Connection"]?.lowercased() == "close")
        #expect(stopper.wait(timeout: .now() + 5) == .success)
        #expect(stopped.value == true)
        #expect(server.openConnections == 0)
        #expect(server.requestsInFlight == 0)
        #expect(throws: RawHTTPError.self) { _ = try RawHTTPConnection(port: server.port) }
    }

    @Test func stopGivesUpOnARequestPastTheGracePeriod() throws {
        let started = DispatchSemaphore(value: 0)
        let server = try HTTPServer { _ in
            started.signal()
            usleep(1_500_000)
            return .text("late")
        }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/")
        #expect(started.wait(timeout: .now() + 5) == .success)
        let begin = ContinuousClock.now
        #expect(server.stop(gracePeriod: .milliseconds(100)) == false)
        // MHD_stop_daemon still joins the worker thread, so stop returns once the handler has.
        #expect(ContinuousClock.now - begin < .seconds(5))
        #expect(server.stop() == true)  // a second call is harmless
    }

    @Test func openConnectionsAreCounted() throws {
        let server = try HTTPServer { _ in .text("ok") }
        defer { server.stop() }
        #expect(server.openConnections == 0)
        var connections: [RawHTTPConnection] = []
        for _ in 0..<3 {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest("GET", "/")
            #expect(try connection.readResponse().status == 200)
            connections.append(connection)
        }
        #expect(server.openConnections == 3)
        connections[0].close()
        connections[1].close()
        #expect(eventually { server.openConnections == 1 })
        connections[2].close()
        #expect(eventually { server.openConnections == 0 })
    }

    @Test func aConnectionOverThePerIPLimitIsClosed() throws {
        let server = try HTTPServer(configuration: .init(perIPConnectionLimit: 2)) { _ in .text("ok") }
        defer { server.stop() }
        let first = try RawHTTPConnection(port: server.port)
        let second = try RawHTTPConnection(port: server.port)
        try first.sendRequest("GET", "/")
        try second.sendRequest("GET", "/")
        #expect(try first.readResponse().status == 200)
        #expect(try second.readResponse().status == 200)
        let third = try RawHTTPConnection(port: server.port)  // the kernel accepts; libmicrohttpd closes
        #expect(third.waitForClose(timeout: .seconds(2)))
        #expect(server.openConnections == 2)
    }

    @Test func aConnectionOverTheLimitWaitsForAFreeSlot() throws {
        let server = try HTTPServer(configuration: .init(threads: 1, connectionLimit: 2)) { _ in .text("ok") }
        defer { server.stop() }
        let first = try RawHTTPConnection(port: server.port)
        let second = try RawHTTPConnection(port: server.port)
        #expect(eventually { server.openConnections == 2 })
        let third = try RawHTTPConnection(port: server.port)
        try third.sendRequest("GET", "/")
        #expect(throws: RawHTTPError.self) { _ = try third.readResponse(timeout: .milliseconds(500)) }
        #expect(server.openConnections == 2)
        first.close()
        #expect(try third.readResponse().status == 200)
        withExtendedLifetime(second) {}
    }

    @Test func idleConnectionsTimeOut() throws {
        let server = try HTTPServer(configuration: .init(timeoutSeconds: 1)) { _ in .text("ok") }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        #expect(eventually { server.openConnections == 1 })
        #expect(connection.waitForClose(timeout: .seconds(4)))
        #expect(eventually { server.openConnections == 0 })
    }

    @Test func deinitStopsTheServer() throws {
        var server: HTTPServer? = try HTTPServer { _ in .text("ok") }
        let port = server!.port
        let connection = try RawHTTPConnection(port: port)
        try connection.sendRequest("GET", "/")
        #expect(try connection.readResponse().status == 200)
        server = nil
        #expect(connection.waitForClose(timeout: .seconds(2)))
        #expect(throws: RawHTTPError.self) { _ = try RawHTTPConnection(port: port) }
    }
}
