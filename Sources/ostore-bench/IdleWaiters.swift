import Foundation
import Synchronization

/// Lightweight idle devices for `ostore-bench live`: each one connection holding a live pull of
/// its own site (Protocol/README.md, section 10.5), sent again on it with the answer's cursor as
/// soon as it is answered, as a device's daemon would. One thread serves them all with `poll`; nothing
/// else of a device (no store, no engine) is simulated.
///
/// ```swift
/// let idle = try IdleWaiters(port: server.port, token: token, cursor: cursor, schemaVersion: "2.0.0", count: 1000)
/// idle.start()
/// while idle.waiting < 1000 { usleep(10_000) }
/// ```
///
/// `@unchecked Sendable`: `devices` and `buffer` are touched only by the polling thread once `start` has run;
/// the counters are atomics and `isStopped` an atomic flag.
final class IdleWaiters: @unchecked Sendable {
    private struct Device {
        let site: String
        var cursor: String
        var socket: Int32 = -1
        var received: [UInt8] = []
    }

    private var devices: [Device]
    private let port: UInt16
    private let token: String
    private let schemaVersion: String
    private let waitMilliseconds: Int
    private let counts = Counts()
    private let ended = DispatchSemaphore(value: 0)
    /// What `receive` reads into, on the polling thread only.
    private var buffer = [UInt8](repeating: 0, count: 8192)

    /// The counters the polling thread keeps.
    private final class Counts: Sendable {
        let waiting = Atomic<Int>(0)
        let answered = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
        let isStopped = Atomic<Bool>(false)
    }

    init(port: UInt16, token: String, cursor: String, schemaVersion: String, count: Int, waitMilliseconds: Int = 60_000)
    {
        self.port = port
        self.token = token
        self.schemaVersion = schemaVersion
        self.waitMilliseconds = waitMilliseconds
        devices = (0..<count).map { _ in
            Device(
                site: (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined(), cursor: cursor)
        }
    }

    /// Pulls sent and not answered yet.
    var waiting: Int { counts.waiting.load(ordering: .relaxed) }
    /// Answers received so far.
    var answered: Int { counts.answered.load(ordering: .relaxed) }
    /// Requests that got no proper answer (a refused connection, an error status).
    var failed: Int { counts.failed.load(ordering: .relaxed) }

    func start() {
        let thread = Thread { [self] in serve() }
        thread.name = "ostore-bench-idle"
        thread.start()
    }

    /// Stops the thread and closes every connection.
    func stop() {
        counts.isStopped.store(true, ordering: .relaxed)
        ended.wait()
    }

    private func serve() {
        for index in devices.indices { send(index) }
        var descriptors = [pollfd](repeating: pollfd(), count: devices.count)
        while !counts.isStopped.load(ordering: .relaxed) {
            for index in devices.indices {
                descriptors[index] = pollfd(fd: devices[index].socket, events: Int16(POLLIN), revents: 0)
            }
            guard poll(&descriptors, nfds_t(descriptors.count), 100) > 0 else { continue }
            for index in devices.indices where descriptors[index].revents != 0 {
                receive(index)
            }
        }
        for device in devices where device.socket >= 0 { close(device.socket) }
        ended.signal()
    }

    /// Reads what arrived; once an answer is complete (its `Content-Length` of body is in), its
    /// cursor becomes the next pull's, sent on the same connection as a device's HTTP client
    /// reuses its connection. A connection the server closed fails its pull and is opened again.
    private func receive(_ index: Int) {
        let count = recv(devices[index].socket, &buffer, buffer.count, 0)
        guard count > 0 else {
            close(devices[index].socket)
            devices[index].socket = -1
            counts.waiting.subtract(1, ordering: .relaxed)
            // Closed before its answer was complete: the pull is sent again on a new connection.
            fail(index)
            send(index)
            return
        }
        devices[index].received += buffer[..<count]
        guard let (status, body) = Self.answer(in: devices[index].received) else { return }
        let cursor = status == 200 ? Self.cursor(in: body) : nil
        devices[index].received = []
        counts.waiting.subtract(1, ordering: .relaxed)
        if let cursor {
            devices[index].cursor = cursor
            counts.answered.add(1, ordering: .relaxed)
        } else {
            fail(index)
        }
        send(index)
    }

    private func fail(_ index: Int) {
        devices[index].received = []
        counts.failed.add(1, ordering: .relaxed)
        usleep(100_000)
    }

    /// The status and body of the answer at the start of `bytes`, once all of it is there.
    private static func answer(in bytes: [UInt8]) -> (status: Int, body: ArraySlice<UInt8>)? {
        guard let headEnd = bytes.firstRange(of: Array("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: bytes[..<headEnd.lowerBound], as: UTF8.self).lowercased()
        let lines = head.split(separator: "\r\n")
        guard let statusLine = lines.first, statusLine.hasPrefix("http/1.1 "),
            let status = Int(statusLine.dropFirst(9).prefix(3)),
            let lengthLine = lines.first(where: { $0.hasPrefix("content-length:") }),
            let length = Int(lengthLine.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
        else { return (0, []) }
        guard bytes.count >= headEnd.upperBound + length else { return nil }
        return (status, bytes[headEnd.upperBound..<headEnd.upperBound + length])
    }

    private static func cursor(in body: ArraySlice<UInt8>) -> String? {
        guard let start = body.firstRange(of: Array(#""cursor":""#.utf8)) else { return nil }
        let rest = body[start.upperBound...]
        guard let end = rest.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: rest[..<end], as: UTF8.self)
    }

    /// The device's live pull, on its connection (a new one when it has none).
    private func send(_ index: Int) {
        if devices[index].socket < 0 {
            guard let socket = connectToServer() else {
                counts.failed.add(1, ordering: .relaxed)
                return
            }
            devices[index].socket = socket
        }
        let device = devices[index]
        let body =
            #"{"cursor":"\#(device.cursor)","protocolVersion":3,"schemaVersion":"\#(schemaVersion)","#
            + #""site":"\#(device.site)","wait":\#(waitMilliseconds)}"#
        let request =
            "POST /v1/datasets/\(ServerProcess.dataset)/pull HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
            + "Authorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let bytes = Array(request.utf8)
        guard Glibc.send(device.socket, bytes, bytes.count, 0) == bytes.count else {
            close(device.socket)
            devices[index].socket = -1
            counts.failed.add(1, ordering: .relaxed)
            return
        }
        counts.waiting.add(1, ordering: .relaxed)
    }

    /// A new connection to the server, nil when it cannot be made.
    private func connectToServer() -> Int32? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            return nil
        }
        return socket
    }
}
