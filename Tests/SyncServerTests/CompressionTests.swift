import Foundation
import Testing

@testable import SyncServer

@Suite struct CompressionTests {
    /// A body that compresses well and is larger than the 1 KiB threshold.
    private static let large = Data(String(repeating: "offline-first sync ", count: 400).utf8)

    @Test func aGzipRequestBodyIsDecompressedBeforeTheHandler() throws {
        let received = Locked(Data())
        let server = try HTTPServer { request in
            received.value = request.body
            return .text("ok")
        }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest(
            "POST", "/", headers: [("Content-Encoding", "gzip")], body: try gzipped(Self.large))
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(received.value == Self.large)
    }

    @Test func concatenatedGzipMembersAreOneBody() throws {
        let received = Locked(Data())
        let server = try HTTPServer { request in
            received.value = request.body
            return .text("ok")
        }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        let body = try gzipped(Data("first ".utf8)) + gzipped(Data("second".utf8))
        try connection.sendRequest("POST", "/", headers: [("Content-Encoding", "gzip")], body: body)
        #expect(try connection.readResponse().status == 200)
        #expect(received.value == Data("first second".utf8))
    }

    @Test func aGzipBombIsRefusedPastTheDecompressedLimit() throws {
        let calls = Locked(0)
        let server = try HTTPServer(configuration: .init(maxBodyBytes: 1 << 20)) { _ in
            calls.withLock { $0 += 1 }
            return .text("ok")
        }
        defer { server.stop() }
        let bomb = try gzipped(Data(count: 64 << 20))  // 64 MiB of zeros, about 64 KiB compressed
        #expect(bomb.count < 1 << 20)
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("POST", "/", headers: [("Content-Encoding", "gzip")], body: bomb)
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.errorCode == "body_too_large")
        #expect(response.text.contains("decompressed"))
        #expect(calls.value == 0)
    }

    @Test func invalidOrTruncatedGzipIsABadRequest() throws {
        let server = try HTTPServer { _ in .text("ok") }
        defer { server.stop() }
        let garbage = try RawHTTPConnection(port: server.port)
        try garbage.sendRequest("POST", "/", headers: [("Content-Encoding", "gzip")], body: Data("not gzip".utf8))
        let refused = try garbage.readResponse()
        #expect(refused.status == 400 && refused.errorCode == "invalid_body_encoding")

        let complete = try gzipped(Self.large)
        let truncated = try RawHTTPConnection(port: server.port)
        try truncated.sendRequest(
            "POST", "/", headers: [("Content-Encoding", "gzip")], body: complete.prefix(complete.count - 4))
        let cut = try truncated.readResponse()
        #expect(cut.status == 400 && cut.errorCode == "invalid_body_encoding")
    }

    @Test func largeResponsesAreGzippedForClientsThatAcceptIt() throws {
        let server = try HTTPServer { request in
            request.path == "/small" ? .text("tiny") : HTTPResponse(status: .ok, body: Self.large)
        }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)

        try connection.sendRequest("GET", "/large", headers: [("Accept-Encoding", "br, gzip;q=0.8")])
        let compressed = try connection.readResponse()
        #expect(compressed.headers["Content-Encoding"] == "gzip")
        #expect(compressed.headers["Vary"] == "Accept-Encoding")
        #expect(compressed.body.count < Self.large.count / 4)
        #expect(try gunzipped(compressed.body) == Self.large)

        try connection.sendRequest("GET", "/large")
        let plain = try connection.readResponse()
        #expect(plain.headers["Content-Encoding"] == nil)
        #expect(plain.body == Self.large)

        try connection.sendRequest("GET", "/large", headers: [("Accept-Encoding", "gzip;q=0")])
        #expect(try connection.readResponse().headers["Content-Encoding"] == nil)

        try connection.sendRequest("GET", "/small", headers: [("Accept-Encoding", "gzip")])
        let small = try connection.readResponse()
        #expect(small.headers["Content-Encoding"] == nil && small.text == "tiny")
    }

    @Test func acceptEncodingParsing() {
        #expect(Gzip.isAccepted(byAcceptEncoding: "gzip"))
        #expect(Gzip.isAccepted(byAcceptEncoding: "deflate, GZIP;q=0.5"))
        #expect(Gzip.isAccepted(byAcceptEncoding: "*"))
        #expect(!Gzip.isAccepted(byAcceptEncoding: "*, gzip;q=0"))
        #expect(!Gzip.isAccepted(byAcceptEncoding: "br"))
        #expect(!Gzip.isAccepted(byAcceptEncoding: nil))
        #expect(!Gzip.isAccepted(byAcceptEncoding: "gzip;q=0.000"))
    }
}
