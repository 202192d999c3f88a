import Foundation
import SyncProtocol
import SyncServer
import Testing

/// A request written byte for byte, the answer the server must give, and whether it must close the
/// connection after it (so that bytes a proxy would read as another request never are).
private struct RawCase: CustomStringConvertible {
    var name: String
    var request: String
    var status: Int
    var code: String
    var closes = false

    var description: String { name }
}

/// The framing attacks of RFC 9112 and the targets a proxy filters on, each refused with the
/// protocol's JSON error body.
private func rawCases(token: String) -> [RawCase] {
    let push = "POST /v1/datasets/family/push HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
    let smuggled = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    let manyFields = (0..<150).map { "X-Field-\($0): v\r\n" }.joined()
    let manyParameters = (0..<1_000).map { "p\($0)=1" }.joined(separator: "&")
    return [
        RawCase(
            name: "two Content-Length fields",
            request: push
                + "Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: \(2 + smuggled.utf8.count)\r\n\r\n{}"
                + smuggled, status: 400, code: "malformed_request", closes: true),
        RawCase(
            name: "Transfer-Encoding beside Content-Length",
            request: push
                + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
                + smuggled, status: 400, code: "malformed_request", closes: true),
        RawCase(
            name: "a space before the colon",
            request: "GET /healthz HTTP/1.1\r\nHost : 127.0.0.1\r\n\r\n", status: 400, code: "malformed_request"),
        RawCase(
            name: "no Host in HTTP/1.1", request: "GET /healthz HTTP/1.1\r\n\r\n", status: 400,
            code: "malformed_request"),
        RawCase(
            name: "two Host fields", request: "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400,
            code: "malformed_request"),
        RawCase(
            name: "two Authorization fields",
            request: push
                + "Authorization: Bearer ost_\(String(repeating: "A", count: 43))\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            status: 400, code: "malformed_request"),
        RawCase(
            name: "two Content-Type fields",
            request: push
                + "Content-Type: text/plain\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            status: 400, code: "malformed_request"),
        RawCase(
            name: "150 header fields", request: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\(manyFields)\r\n",
            status: 431, code: "headers_too_large"),
        RawCase(
            name: "1,000 query parameters",
            request: "GET /healthz?\(manyParameters) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", status: 414,
            code: "uri_too_long"),
        RawCase(
            name: "an encoded slash in the dataset segment",
            request: "POST /v1/datasets/x%2Fpush HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", status: 404, code: "not_found"),
        RawCase(
            name: "encoded slashes for every separator",
            request: "POST /v1%2Fdatasets%2Ffamily%2Fhello HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
            status: 404, code: "not_found"),
        RawCase(
            name: "Content-Encoding x-gzip",
            request: push + "Content-Type: application/json\r\nContent-Encoding: x-gzip\r\nContent-Length: 2\r\n\r\n{}",
            status: 415, code: "unsupported_content_encoding"),
        RawCase(
            name: "a body for /healthz, which anyone may ask",
            request: "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 8388608\r\n\r\n[[[[", status: 413,
            code: "body_too_large", closes: true),
        RawCase(
            name: "a chunked body, its first chunk line 100 KiB of extension",
            request: push + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2;"
                + String(repeating: "x", count: 100 * 1024) + "\r\n{}\r\n0\r\n\r\n", status: 411,
            code: "length_required", closes: true),
        RawCase(
            name: "Transfer-Encoding gzip",
            request: push + "Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n",
            status: 400, code: "malformed_request", closes: true),
    ]
}

@Suite("Reference server: hostile connections")
struct HostileConnectionTests {
    @Test(arguments: StorageBackend.allCases)
    func ambiguousFramingAndEncodedTargetsAreRefusedWithJSON(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        for hostile in rawCases(token: token) {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send(hostile.request)
            let response = try connection.readResponse(timeout: .seconds(5))
            #expect(response.status == hostile.status, "\(hostile.name): \(response.text.prefix(300))")
            #expect(response.errorCode == hostile.code, "\(hostile.name): \(response.text.prefix(300))")
            #expect(response.headers["Content-Type"] == "application/json", "\(hostile.name)")
            if hostile.closes {
                // Nothing after the refused request is read as another one.
                #expect(connection.waitForClose(timeout: .seconds(5)), "\(hostile.name): the connection stayed open")
            }
        }
        #expect(try server.storage().datasets().first { $0.name == "family" }?.changes == 0)
        #expect(try server.request("GET", "/healthz").status == 200)
    }

    /// `HEAD /healthz` is not `GET` (Protocol §4): 405 with `Allow: GET`.
    @Test func headOnHealthIsNotAllowed() throws {
        let server = try LiveServer(backend: .sqlite)
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("HEAD", "/healthz")
        let response = try connection.readResponse(toHead: true)
        #expect(response.status == 405 && response.headers["Allow"] == "GET")
    }

    /// A push without a token, announcing the largest body the server takes, is answered `401` as
    /// soon as its headers arrive: its body is never read, so a crowd of them costs no memory.
    @Test(arguments: StorageBackend.allCases)
    func aRequestWithoutATokenIsRefusedBeforeItsBodyIsRead(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        _ = try makeDataset(server, "family")
        let baseline = server.residentKilobytes
        var connections: [RawHTTPConnection] = []
        for _ in 0..<100 {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest(
                "POST", "/v1/datasets/family/push",
                headers: [("Content-Type", "application/json"), ("Content-Length", "8388608")])
            try connection.send(Data(repeating: UInt8(ascii: "["), count: 64 * 1024))
            connections.append(connection)
        }
        for connection in connections {
            let response = try connection.readResponse(timeout: .seconds(2))
            #expect(response.status == 401 && response.errorCode == "unauthorized")
            #expect(connection.waitForClose(timeout: .seconds(5)))
        }
        #expect(server.residentKilobytes - baseline < 32_768)
    }

    /// Bodies in flight share one budget: once two announced bodies hold it, a third is answered
    /// `503` with `Retry-After` on its headers, and the budget is back once they end.
    @Test func bodiesInFlightShareOneMemoryBudget() throws {
        let server = try LiveServer(
            backend: .sqlite, arguments: ["--max-body-bytes", "65536", "--body-memory-budget", "131072"])
        let token = try makeDataset(server, "family")
        let headers = [
            ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Content-Length", "65536"),
        ]
        var holding: [RawHTTPConnection] = []
        for _ in 0..<2 {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest("POST", "/v1/datasets/family/push", headers: headers)
            try connection.send(Data(repeating: UInt8(ascii: " "), count: 1024))
            // Admitted, and so holding its place: a refusal would have come at once.
            #expect(throws: RawHTTPError.self) { _ = try connection.readResponse(timeout: .milliseconds(300)) }
            holding.append(connection)
        }
        let third = try RawHTTPConnection(port: server.port)
        try third.sendRequest("POST", "/v1/datasets/family/push", headers: headers)
        let refused = try third.readResponse(timeout: .seconds(2))
        #expect(refused.status == 503 && refused.errorCode == "unavailable" && refused.headers["Retry-After"] == "1")
        for connection in holding { connection.close() }
        let body = try JSONEncoder().encode(["protocolVersion": 2])
        #expect(
            eventually(timeout: .seconds(5)) {
                (try? server.request("POST", "/v1/datasets/family/push", token: token, json: body))?.status == 400
            })
    }

    /// One token's bodies hold at most its share of the budget: its third slow upload is refused
    /// while another token's goes on.
    @Test func oneTokensBodiesHoldAtMostItsShareOfTheBudget() throws {
        let server = try LiveServer(
            backend: .sqlite,
            arguments: [
                "--max-body-bytes", "65536", "--body-memory-budget", "262144", "--body-memory-per-token", "131072",
            ])
        let storage = try server.storage()
        try storage.createDataset(named: "family")
        let greedy = try storage.createToken(dataset: "family", readOnly: false).secret
        let other = try storage.createToken(dataset: "family", readOnly: false).secret
        func upload(_ token: String) throws -> RawHTTPConnection {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest(
                "POST", "/v1/datasets/family/push",
                headers: [
                    ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
                    ("Content-Length", "65536"),
                ])
            try connection.send(Data(repeating: UInt8(ascii: " "), count: 1024))
            return connection
        }
        var holding: [RawHTTPConnection] = []
        for _ in 0..<2 {
            let connection = try upload(greedy)
            #expect(throws: RawHTTPError.self) { _ = try connection.readResponse(timeout: .milliseconds(300)) }
            holding.append(connection)
        }
        let refused = try upload(greedy).readResponse(timeout: .seconds(2))
        #expect(refused.status == 503 && refused.errorCode == "unavailable", "\(refused.text)")
        let admitted = try upload(other)
        #expect(throws: RawHTTPError.self) { _ = try admitted.readResponse(timeout: .milliseconds(300)) }
        #expect(holding.count == 2)
    }

    /// Headers sent a line at a time and a body sent a byte at a time, each just often enough to
    /// keep libmicrohttpd's idle timeout from firing, are cut off at their deadlines; the server
    /// answers everyone else meanwhile.
    @Test func trickledHeadersAndBodiesAreCutOffAtTheirDeadlines() throws {
        let server = try LiveServer(backend: .sqlite, arguments: ["--headers-timeout", "2", "--min-body-rate", "1024"])
        let token = try makeDataset(server, "family")
        let started = ContinuousClock.now
        let headers = try RawHTTPConnection(port: server.port)
        try headers.send("GET /healthz HTTP/1.1\r\n")
        let body = try RawHTTPConnection(port: server.port)
        try body.sendRequest(
            "POST", "/v1/datasets/family/push",
            headers: [
                ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
                ("Content-Length", "100000"),
            ])
        var headersClosedAt: Duration?
        var bodyClosedAt: Duration?
        var line = 0
        while ContinuousClock.now - started < .seconds(10), headersClosedAt == nil || bodyClosedAt == nil {
            Thread.sleep(forTimeInterval: 0.4)
            line += 1
            if headersClosedAt == nil {
                if (try? headers.send("X-Line-\(line): still here\r\n")) == nil { headersClosedAt = .now - started }
            }
            if bodyClosedAt == nil {
                if (try? body.send("[")) == nil { bodyClosedAt = .now - started }
            }
            #expect(try server.request("GET", "/healthz").status == 200)
        }
        let headersClosed = try #require(headersClosedAt, "a trickle of header lines kept its connection for 10 s")
        let bodyClosed = try #require(bodyClosedAt, "a trickle of body bytes kept its connection for 10 s")
        // Two seconds for the headers (and one more to notice); a body gets two seconds' grace, then
        // must average 1 KiB a second.
        #expect(headersClosed >= .seconds(2) && headersClosed < .seconds(5), "\(headersClosed)")
        #expect(bodyClosed >= .seconds(2) && bodyClosed < .seconds(6), "\(bodyClosed)")
    }

    /// 24 pushes of one token from 24 sites, each naming a batch that never comes, sent at once to a
    /// server with one polling thread: none holds a thread while it waits, so `/healthz` answers at
    /// once throughout; 16 (the per-token bound) wait and are refused after the wait, the other 8
    /// at once.
    @Test(arguments: StorageBackend.allCases)
    func waitingPushesHoldNoThreadAndAreBoundedPerToken(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend, arguments: ["--threads", "1"])
        let token = try makeDataset(server, "family")
        let started = ContinuousClock.now
        let connections = try (0..<24).map { _ in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest(
                "POST", "/v1/datasets/family/push",
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: waitingPush(site: randomSite()))
            return connection
        }
        Thread.sleep(forTimeInterval: 0.3)
        var slowest = Duration.zero
        for _ in 0..<10 {
            let asked = ContinuousClock.now
            #expect(try server.request("GET", "/healthz").status == 200)
            slowest = max(slowest, .now - asked)
        }
        // Held by a waiting push, it would take the push's whole wait (2 s) or more; the load test
        // (run alone) holds it to 100 ms.
        #expect(slowest < .seconds(1), "/healthz took \(slowest) while pushes waited")
        var refusedAtOnce = 0
        for connection in connections {
            let response = try connection.readResponse(timeout: .seconds(10))
            #expect(response.status == 409 && response.errorCode == "previous_push_missing", "\(response.text)")
            if response.text.contains("of this token are already waiting") { refusedAtOnce += 1 }
        }
        #expect(refusedAtOnce == 8)
        // The 16 waited together, not one after another.
        #expect(ContinuousClock.now - started < .seconds(6))
    }
}

extension HostileConnectionTests {
    /// Pushes of 8 MiB of tiny values (an unknown member the strict reader must read), four at once:
    /// each refused for its count of values, read one after another off the polling threads, so
    /// `/healthz` answers meanwhile and the server's memory grows by a fraction of what a tree of
    /// one such body would take (about 200 MiB).
    @Test func bodiesOfTinyValuesAreReadOneAtATimeAndRefused() throws {
        let server = try LiveServer(backend: .sqlite)
        let token = try makeDataset(server, "family")
        let site = randomSite()
        var text =
            #"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"\#(site)","changes":[{"table":"notes","#
            + #""key":{"id":{"text":"n"}},"op":"update","clock":"1764000000000-0","site":"\#(site)","seq":1,"#
            + #""columns":{"title":{"null":true}},"x":["#
        text += Array(repeating: "0", count: (8 * 1024 * 1024 - 4096 - text.utf8.count) / 2).joined(separator: ",")
        text += "]}]}"
        let body = Data(text.utf8)
        let baseline = server.peakResidentKilobytes
        let connections = try (0..<4).map { _ in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest(
                "POST", "/v1/datasets/family/push",
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")], body: body)
            return connection
        }
        let asked = ContinuousClock.now
        #expect(try server.request("GET", "/healthz").status == 200)
        // Read on a polling thread, the four would hold /healthz for seconds.
        #expect(ContinuousClock.now - asked < .seconds(1))
        for connection in connections {
            let response = try connection.readResponse(timeout: .seconds(60))
            #expect(response.status == 400 && response.errorCode == "malformed_json", "\(response.text.prefix(200))")
        }
        #expect(server.peakResidentKilobytes - baseline < 128 * 1024)
    }
}

/// A site id no other test uses.
func randomSite() -> String {
    (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
}

/// A push of `site` naming a batch (seq 49) the server never gets, with `after` last in the body
/// rather than first, as a hand-written client may send it.
func waitingPush(site: String) -> Data {
    let change =
        #"{"table":"notes","key":{"id":{"text":"n"}},"op":"insert","columns":{"id":{"text":"n"}},"#
        + #""clock":"1764000000000-0","site":"\#(site)","seq":50}"#
    return Data(
        #"{"protocolVersion":2,"schemaVersion":"1.0.0","site":"\#(site)","changes":[\#(change)],"after":49}"#.utf8)
}
