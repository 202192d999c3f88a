import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// Echoes what the server made of the request: method, path, query, a header, the remote address, the body.
private let echo: HTTPHandler = { request in
    var headers: HTTPHeaders = [
        "X-Method": request.method,
        "X-Path": request.path,
        "X-Query": request.queryItems.map { "\($0.name)=\($0.value ?? "<nil>")" }.joined(separator: "&"),
        "X-Remote": request.remoteAddress,
    ]
    if let test = request.headers["x-test"] {
        headers["X-Test-Echo"] = test
    }
    return HTTPResponse(status: .ok, headers: headers, body: request.body)
}

@Suite struct HTTPServerTests {
    @Test func echoRoundTrip() throws {
        let server = try HTTPServer(handler: echo)
        defer { server.stop() }
        #expect(server.port != 0)
        let connection = try RawHTTPConnection(port: server.port)
        let body = Data("hello, server \u{1F600}".utf8)
        try connection.sendRequest(
            "POST", "/echo/some%20path?a=1&b=two%20words&c=x+y&flag", headers: [("X-TEST", "Mixed Case")],
            body: body)
        let response = try connection.readResponse()
        #expect(response.status == 200)
        #expect(response.body == body)
        #expect(response.headers["x-method"] == "POST")
        // The path as sent: an encoded character, a `%2F` above all, never changes its segments.
        #expect(response.headers["X-Path"] == "/echo/some%20path")
        #expect(response.headers["X-Query"] == "a=1&b=two words&c=x y&flag=<nil>")
        #expect(response.headers["X-Test-Echo"] == "Mixed Case")
        #expect(response.headers["X-Remote"] == "127.0.0.1")
    }

    @Test func keepAliveServesTwoRequestsOnOneConnection() throws {
        let server = try HTTPServer(handler: echo)
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("POST", "/first", body: Data("one".utf8))
        let first = try connection.readResponse()
        try connection.sendRequest("GET", "/second")
        let second = try connection.readResponse()
        #expect(first.status == 200 && first.text == "one" && first.headers["X-Path"] == "/first")
        #expect(second.status == 200 && second.body.isEmpty && second.headers["X-Path"] == "/second")
        #expect(first.headers["Connection"]?.lowercased() != "close")
        #expect(server.openConnections == 1)
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let server = try HTTPServer(handler: echo)
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.send(
            "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        let first = try connection.readResponse()
        let second = try connection.readResponse()
        #expect(first.headers["X-Path"] == "/a")
        #expect(second.headers["X-Path"] == "/b" && second.text == "hi")
    }

    @Test func handlerHeadersAndStatusReachTheClient() throws {
        let server = try HTTPServer { _ in
            var response = HTTPResponse.error(.upgradeRequired, "Upgrade the app.")
            response.headers.add(name: "X-Many", value: "1")
            response.headers.add(name: "X-Many", value: "2")
            response.headers["Content-Length"] = "999"  // ignored: the server computes it
            return response
        }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/")
        let response = try connection.readResponse()
        #expect(response.status == 409)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.headers.values(for: "x-many") == ["1", "2"])
        #expect(response.text == #"{"error":{"code":"upgrade_required","message":"Upgrade the app."}}"#)
    }

    @Test func headersThatCannotBeSentBecomeA500() throws {
        let server = try HTTPServer { request in
            let headers: HTTPHeaders =
                switch request.path {
                case "/line-break": ["X-Bad": "a\r\nSet-Cookie: injected=1"]
                case "/colon": ["Set-Cookie: injected=1\r\nX": "1"]
                default: ["X:Forged": "1"]
                }
            return HTTPResponse(status: .ok, headers: headers, body: Data("x".utf8))
        }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        for path in ["/line-break", "/colon", "/name-with-colon"] {
            try connection.sendRequest("GET", path)
            let response = try connection.readResponse()
            #expect(response.status == 500)
            #expect(response.errorCode == "internal_error")
            #expect(!response.headers.contains("Set-Cookie") && !response.headers.contains("X"))
        }
    }

    @Test func emptyValuesAndConnectionHeadersAreSentAsHTTPMeansThem() throws {
        let server = try HTTPServer { request in
            HTTPResponse(
                status: .ok, headers: ["X-Empty": "", "Connection": request.path == "/close" ? "close" : "keep-alive"])
        }
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("GET", "/keep")
        let kept = try connection.readResponse()
        #expect(kept.status == 200)
        #expect(kept.headers["X-Empty"] == "")
        try connection.sendRequest("GET", "/close")
        let closing = try connection.readResponse()
        #expect(closing.headers["Connection"] == "close")
        #expect(connection.waitForClose())
    }

    @Test func headAnswersHeadersOnly() throws {
        let server = try HTTPServer(handler: echo)
        defer { server.stop() }
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest("HEAD", "/thing")
        let head = try connection.readResponse(toHead: true)
        #expect(head.status == 200 && head.headers["X-Method"] == "HEAD" && head.body.isEmpty)
        try connection.sendRequest("GET", "/after")  // the connection is still in step
        #expect(try connection.readResponse().headers["X-Path"] == "/after")
    }

    /// libmicrohttpd answers these itself, before the handler, with its own HTML bodies and
    /// `Connection: close`. (0.9.75 writes the header block of its 400/413 for a bad `Content-Length`
    /// twice; only the status line is checked here.)
    @Test func requestsLibmicrohttpdRefusesItself() throws {
        let calls = Locked(0)
        let server = try HTTPServer(configuration: .init(connectionMemoryLimit: 16 * 1024)) { _ in
            calls.withLock { $0 += 1 }
            return .text("ok")
        }
        defer { server.stop() }
        let cases: [(String, Int)] = [
            ("GET / HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n", 431),
            ("GET /\(String(repeating: "a", count: 20_000)) HTTP/1.1\r\nHost: x\r\n\r\n", 414),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
            ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413),
        ]
        for (request, status) in cases {
            let connection = try RawHTTPConnection(port: server.port)
            try? connection.send(request)
            let response = try connection.readResponse()
            #expect(response.status == status)
            #expect(response.headers["Connection"] == "close")
        }
        #expect(calls.value == 0)
    }

    @Test func portInUseIsATypedErrorThatSaysWhatToDo() throws {
        let first = try HTTPServer(handler: echo)
        defer { first.stop() }
        #expect(throws: HTTPServerError.addressInUse(address: "127.0.0.1", port: first.port)) {
            _ = try HTTPServer(configuration: .init(port: first.port), handler: echo)
        }
        do {
            _ = try HTTPServer(configuration: .init(port: first.port), handler: echo)
        } catch {
            #expect(error.description.contains("already in use"))
            #expect(error.description.contains("port 0"))
        }
    }

    @Test func badConfigurationsAreRefusedBeforeStarting() {
        #expect(throws: HTTPServerError.invalidAddress("localhost")) {
            _ = try HTTPServer(configuration: .init(address: "localhost"), handler: echo)
        }
        #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(configuration: .init(threads: 0), handler: echo)
        }
        #expect(throws: HTTPServerError.self) {
            _ = try HTTPServer(configuration: .init(connectionMemoryLimit: 100), handler: echo)
        }
    }

    @Test func listensOnIPv6Loopback() throws {
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: .init(address: "::1"), handler: echo)
        } catch .addressNotAvailable {
            return  // a machine without IPv6 loopback
        }
        defer { server.stop() }
        #expect(server.port != 0)
    }
}
