import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What ``FaultProxy`` does with one HTTP request on its way to the server.
public enum ProxyFault: String, Sendable, Hashable, CaseIterable {
    /// Forwarded, and the answer relayed.
    case pass
    /// The client's connection is reset (RST); the server never sees the request.
    case resetBeforeForwarding
    /// The server answers (a push is stored); the client's connection is reset instead of the answer.
    case resetAfterForwarding
    /// The server answers; the client gets nothing until its own timeout gives up.
    case stall
    /// The server answers; the client gets the first half of the answer and then the end of the stream.
    case truncate
    /// The server answers; the client gets the answer's status line alone and then the end of the
    /// stream (libcurl reports such an answer as complete, with an empty body).
    case truncateHead
    /// The request reaches the server twice; the client gets the second answer.
    case replay
    /// One of the last 64 requests through this proxy reaches the server again (its answer dropped), then
    /// this one is forwarded.
    case replayEarlier
}

/// One request as the proxy saw it.
public struct ProxiedRequest: Sendable {
    /// 1 for the first request through the proxy, then 2, 3…
    public var number: Int
    /// The request target, e.g. `/v1/datasets/family/push`.
    public var path: String
    public var body: Data
}

/// A TCP proxy on 127.0.0.1 and a free port, between sync clients and an `ostore-server`, that
/// breaks requests the way networks do: per request, by a plan the test gives (scripted, or a
/// seeded random choice), it resets the connection (RST by `SO_LINGER` 0), stalls past the
/// client's timeout, truncates the answer, or sends the request to the server twice.
///
/// It speaks just enough HTTP/1.1 to find requests and answers (`Content-Length` bodies, as
/// libcurl sends and libmicrohttpd answers); each request gets a fresh connection to the server,
/// so the server may be killed and restarted on another port (``upstreamPort``).
///
/// ```swift
/// let proxy = try FaultProxy(upstreamPort: server.port)
/// proxy.plan = { request in request.path.hasSuffix("/push") ? .resetAfterForwarding : .pass }
/// // clients talk to proxy.baseURL
/// ```
///
/// `@unchecked Sendable`: every mutable property is a `Locked` value or set once in `init`; each
/// connection is served by its own thread, which alone touches that connection's sockets.
public final class FaultProxy: Sendable {
    public let port: UInt16
    private let core: ProxyCore

    public init(upstreamPort: UInt16) throws {
        let listener = try ProxySocket.listening()
        port = try listener.localPort()
        core = ProxyCore(listener: listener, upstreamPort: upstreamPort)
        // The thread keeps the core, not the proxy, so releasing the proxy stops it.
        let core = core
        Thread { core.acceptLoop() }.start()
    }

    deinit { core.stop() }

    /// `http://127.0.0.1:PORT`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Where requests go; change it after the server restarted on another port.
    public var upstreamPort: UInt16 {
        get { core.state.value.upstreamPort }
        set { core.state.withLock { $0.upstreamPort = newValue } }
    }

    /// Chooses the fault for each request; `.pass` for all until set.
    public var plan: @Sendable (ProxiedRequest) -> ProxyFault {
        get { core.plan.value }
        set { core.plan.value = newValue }
    }

    /// Runs on the connection's thread once a request has been sent to the server and before its
    /// answer is read: where a test kills the server in the middle of a request.
    public var afterForwarding: (@Sendable (ProxiedRequest) -> Void)? {
        get { core.hook.value }
        set { core.hook.value = newValue }
    }

    /// Runs on the connection's thread once an answer has been relayed to the client: where a
    /// test kills the client while it applies what it was sent.
    public var afterAnswering: (@Sendable (ProxiedRequest) -> Void)? {
        get { core.answered.value }
        set { core.answered.value = newValue }
    }

    /// How many requests got each fault so far.
    public var counts: [ProxyFault: Int] { core.state.value.counts }

    /// How many requests the proxy has seen.
    public var requestCount: Int { core.state.value.requests }

    /// Closes the listener and every open connection.
    public func stop() { core.stop() }
}

/// The proxy's listener, connections and plan, shared by its threads.
///
/// `@unchecked Sendable`: the mutable state is behind `Locked`; each connection's sockets are
/// touched only by its own thread, except `shutDown()`, which is safe from any thread.
private final class ProxyCore: @unchecked Sendable {
    let listener: ProxySocket
    let state: Locked<State>
    let plan = Locked<@Sendable (ProxiedRequest) -> ProxyFault>({ _ in .pass })
    let hook = Locked<(@Sendable (ProxiedRequest) -> Void)?>(nil)
    let answered = Locked<(@Sendable (ProxiedRequest) -> Void)?>(nil)

    struct State {
        var upstreamPort: UInt16
        var requests = 0
        var counts: [ProxyFault: Int] = [:]
        var captured: [Data] = []
        var open: [Int32: ProxySocket] = [:]
        var stopped = false
    }

    init(listener: ProxySocket, upstreamPort: UInt16) {
        self.listener = listener
        state = Locked(State(upstreamPort: upstreamPort))
    }

    func stop() {
        let open = state.withLock { state -> [ProxySocket] in
            state.stopped = true
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        listener.shutDown()
        for socket in open { socket.shutDown() }
    }

    func acceptLoop() {
        while let client = listener.accept() {
            let registered = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.open[client.descriptor] = client
                return true
            }
            guard registered else { return }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ client: ProxySocket) {
        var buffer = Data()
        defer {
            // Forgotten before it is closed, while its descriptor cannot be another connection's.
            _ = state.withLock { $0.open.removeValue(forKey: client.descriptor) }
            client.close()
        }
        while let message = HTTPMessage.read(from: client, buffer: &buffer) {
            let number = state.withLock { state -> Int in
                state.requests += 1
                return state.requests
            }
            let request = ProxiedRequest(number: number, path: message.target, body: message.body)
            let fault = plan.value(request)
            let (port, earlier) = state.withLock { state -> (UInt16, Data?) in
                state.counts[fault, default: 0] += 1
                let earlier = state.captured.isEmpty ? nil : state.captured[number % state.captured.count]
                // The last 64 requests, so a replay is of recent work (the same dataset, a push
                // the server has already stored or one it has not yet seen the end of).
                if state.captured.count < 64 {
                    state.captured.append(message.raw)
                } else {
                    state.captured[number % 64] = message.raw
                }
                return (state.upstreamPort, earlier)
            }
            if fault == .resetBeforeForwarding { return client.reset() }
            if fault == .replayEarlier, let earlier { _ = exchange(earlier, port: port, request: nil) }
            guard var answer = exchange(message.raw, port: port, request: request) else { return client.reset() }
            if fault == .replay {
                guard let second = exchange(message.raw, port: port, request: nil) else { return client.reset() }
                answer = second
            }
            switch fault {
            case .resetAfterForwarding:
                return client.reset()
            case .stall:
                // Nothing more is sent; the client gives up by its own timeout and closes.
                client.waitUntilClosed(atMost: 30)
                return client.reset()
            case .truncate:
                _ = client.send(answer.prefix(max(1, answer.count / 2)))
                return client.shutDown()
            case .truncateHead:
                let statusLine = answer.range(of: Data("\r\n".utf8)).map { answer[..<$0.upperBound] } ?? answer
                _ = client.send(Data(statusLine))
                return client.shutDown()
            case .pass, .resetBeforeForwarding, .replay, .replayEarlier:
                guard client.send(answer) else { return }
                answered.value?(request)
            }
        }
    }

    /// Sends a request's bytes to the server on a fresh connection and reads the whole answer;
    /// nil when the server is gone or cut the answer short.
    private func exchange(_ raw: Data, port: UInt16, request: ProxiedRequest?) -> Data? {
        guard let upstream = ProxySocket.connected(to: port) else { return nil }
        defer { upstream.close() }
        guard upstream.send(raw) else { return nil }
        if let request, let hook = hook.value { hook(request) }
        var buffer = Data()
        return HTTPMessage.read(from: upstream, buffer: &buffer)?.raw
    }
}

/// One HTTP/1.1 message with a `Content-Length` body (or none), as bytes and as read.
struct HTTPMessage {
    var raw: Data
    /// The request target, or the status line's code for an answer.
    var target: String
    var body: Data

    /// Reads one message; nil at the end of the stream, on an error, or after 30 s of silence.
    static func read(from socket: ProxySocket, buffer: inout Data) -> HTTPMessage? {
        let separator = Data("\r\n\r\n".utf8)
        var headEnd: Range<Data.Index>?
        while true {
            headEnd = buffer.range(of: separator)
            if headEnd != nil { break }
            guard let chunk = socket.receive(), !chunk.isEmpty else { return nil }
            buffer += chunk
        }
        let head = String(decoding: buffer[buffer.startIndex..<headEnd!.lowerBound], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let target = lines.first.map { $0.split(separator: " ").dropFirst().first.map(String.init) ?? "" } ?? ""
        let length =
            lines.dropFirst().compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
        let total = headEnd!.upperBound - buffer.startIndex + length
        while buffer.count < total {
            guard let chunk = socket.receive(), !chunk.isEmpty else { return nil }
            buffer += chunk
        }
        let raw = Data(buffer.prefix(total))
        buffer = Data(buffer.dropFirst(total))
        return HTTPMessage(raw: raw, target: target, body: Data(raw.suffix(length)))
    }
}

/// A TCP socket on the loopback interface; closed when released.
///
/// `@unchecked Sendable`: the descriptor is immutable; `shutDown()` (the only call made from
/// another thread, to wake a blocked `accept` or `recv`) and `close()` take a lock, so a descriptor
/// is never shut down after it was closed (and perhaps reused).
final class ProxySocket: @unchecked Sendable {
    let descriptor: Int32
    private let closed = Locked(false)

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { close() }

    static func listening() throws -> ProxySocket {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ProxyFailure(what: "socket", code: errno) }
        let socket = ProxySocket(descriptor: descriptor)
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw ProxyFailure(what: "bind", code: errno) }
        guard listen(descriptor, 64) == 0 else { throw ProxyFailure(what: "listen", code: errno) }
        return socket
    }

    static func connected(to port: UInt16) -> ProxySocket? {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let socket = ProxySocket(descriptor: descriptor)
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected == 0 ? socket : nil
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    func localPort() throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0 else { throw ProxyFailure(what: "getsockname", code: errno) }
        return UInt16(bigEndian: address.sin_port)
    }

    func accept() -> ProxySocket? {
        while true {
            let client = Glibc.accept(descriptor, nil, nil)
            if client >= 0 { return ProxySocket(descriptor: client) }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Up to 64 KiB; empty at the end of the stream, nil on an error or after 30 s with nothing.
    func receive() -> Data? {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 30_000) > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: 65_536)
        let count = recv(descriptor, &bytes, bytes.count, 0)
        guard count >= 0 else { return nil }
        return Data(bytes[0..<count])
    }

    /// Whether every byte went out.
    func send(_ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let sent = Glibc.send(
                    descriptor, buffer.baseAddress! + offset, buffer.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                guard sent > 0 else { return false }
                offset += sent
            }
            return true
        }
    }

    /// Waits until the peer closes its end (or `seconds` pass), discarding what it sends.
    func waitUntilClosed(atMost seconds: Int32) {
        let deadline = Date().addingTimeInterval(Double(seconds))
        while Date() < deadline {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 100) >= 0 else { return }
            if poller.revents != 0 {
                var bytes = [UInt8](repeating: 0, count: 4_096)
                if recv(descriptor, &bytes, bytes.count, 0) <= 0 { return }
            }
        }
    }

    /// Closes with an RST instead of a FIN: `SO_LINGER` on with a zero timeout.
    func reset() {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    /// Ends both directions (wakes a thread blocked on the socket) without releasing the descriptor.
    func shutDown() {
        closed.withLock { closed in
            if !closed { Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        }
    }

    func close() {
        closed.withLock { closed in
            if !closed { Glibc.close(descriptor) }
            closed = true
        }
    }
}

public struct ProxyFailure: Error, CustomStringConvertible {
    public let what: String
    public let code: Int32
    public var description: String { "the fault proxy's \(what) failed: \(String(cString: strerror(code)))" }
}

/// A small, fast, seedable random number generator (SplitMix64), so a failing random test can be
/// replayed from its seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
