import Foundation
import Testing

@testable import SyncServer

/// Answers the size of the body it was given; counts its calls.
private func sizeHandler(calls: Locked<Int>) -> HTTPHandler {
    { request in
        calls.withLock { $0 += 1 }
        return .text("\(request.body.count)")
    }
}

@Suite struct BodyLimitTests {
    @Test func bodyExactlyAtTheLimitIsAcceptedAndOneByteOverIsRefused() throws {
        let calls = Locked(0)
        let server = try HTTPServer(configuration: .init(maxBodyBytes: 1000), handler: sizeHandler(calls: calls))
        defer { server.stop() }

        let atLimit = try RawHTTPConnection(port: server.port)
        try atLimit.sendRequest("POST", "/", body: Data(repeating: 0x61, count: 1000))
        let accepted = try atLimit.readResponse()
        #expect(accepted.status == 200)
        #expect(accepted.text == "1000")

        let over = try RawHTTPConnection(port: server.port)
        try over.sendRequest("POST", "/", body: Data(repeating: 0x61, count: 1001))
        let refused = try over.readResponse()
        #expect(refused.status == 413)
        #expect(refused.headers["Content-Type"] == "application/json")
        #expect(refused.errorCode == "body_too_large")
        #expect(refused.text.contains("1000 bytes"))
        #expect(calls.value == 1)
    }

    @Test func aGigabyteContentLengthIsRefusedAtOnceWithoutSendingTheBody() throws {
        let calls = Locked(0)
        let server = try HTTPServer(configuration: .init(maxBodyBytes: 1 << 20), handler: sizeHandler(calls: calls))
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let start = ContinuousClock.now
        try connection.send("POST /push HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n")
        let response = try connection.readResponse(timeout: .seconds(1))
        #expect(ContinuousClock.now - start < .seconds(1))
        #expect(response.status == 413)
        #expect(response.errorCode == "body_too_large")
        #expect(response.text.contains("1000000000"))
        // The body is never read: the server closes the connection, so sending it fails.
        #expect(connection.waitForClose(timeout: .seconds(2)))
        #expect(throws: RawHTTPError.self) {
            for _ in 0..<64 {
                try connection.send(Data(count: 1 << 20))
            }
        }
        #expect(calls.value == 0)
        #expect(eventually { server.requestsInFlight == 0 })
    }

    @Test func expectContinueOverTheLimitGetsNo100() throws {
        let server = try HTTPServer(configuration: .init(maxBodyBytes: 10), handler: sizeHandler(calls: Locked(0)))
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
        let response = try connection.readResponse()
        #expect(response.status == 413)
    }

    @Test func aChunkedBodyGrowingPastTheLimitIsRefused() throws {
        let calls = Locked(0)
        let server = try HTTPServer(configuration: .init(maxBodyBytes: 1000), handler: sizeHandler(calls: calls))
        defer { server.stop() }

        let within = try RawHTTPConnection(port: server.port)
        try within.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<2 {
            try within.send("1F4\r\n" + String(repeating: "b", count: 500) + "\r\n")
        }
        try within.send("0\r\n\r\n")
        let accepted = try within.readResponse()
        #expect(accepted.status == 200 && accepted.text == "1000")

        let over = try RawHTTPConnection(port: server.port)
        try over.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<3 {
            try over.send("1F4\r\n" + String(repeating: "b", count: 500) + "\r\n")
        }
        try over.send("0\r\n\r\n")
        let refused = try over.readResponse()
        #expect(refused.status == 413)
        #expect(refused.errorCode == "body_too_large")
        #expect(calls.value == 1)
    }

    @Test func aClientSendingFarPastTheLimitIsDisconnected() throws {
        let server = try HTTPServer(configuration: .init(maxBodyBytes: 1000), handler: sizeHandler(calls: Locked(0)))
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        let chunk = "2000\r\n" + String(repeating: "c", count: 0x2000) + "\r\n"
        // 1000 allowed plus 64 KiB read and dropped, then the connection is closed; the body never ends.
        for _ in 0..<16 {
            try? connection.send(chunk)
        }
        #expect(connection.waitForClose(timeout: .seconds(2)))
        #expect(eventually { server.requestsInFlight == 0 && server.openConnections == 0 })
    }

    @Test func anUnsupportedContentEncodingIsRefusedWith415() throws {
        let server = try HTTPServer(handler: sizeHandler(calls: Locked(0)))
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("POST", "/", headers: [("Content-Encoding", "br")], body: Data("xx".utf8))
        let response = try connection.readResponse()
        #expect(response.status == 415)
        #expect(response.errorCode == "unsupported_content_encoding")
    }
}
