import Foundation
import Synchronization

/// Lightweight idle devices for `ostore-bench live`: each one connection holding a live pull of
/// its own site (Protocol/README.md, section 10.5), sent again with the answer's cursor as soon as
/// it is answered, as a device's daemon would. One thread serves them all with `poll`; nothing
/// else of a device (no store, no engine) is simulated.
///
/// ```swift
/// let idle = try IdleWaiters(port: server.port, token: token, cursor: cursor, schemaVersion: "2.0.0", count: 1000)
/// idle.start()
/// while idle.waiting < 1000 { usleep(10_000) }
/// ```
///
/// `@unchecked Sendable`: `devices` is touched only by the polling thread once `start` has run;
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

    /// Reads what arrived; once the server closed the connection, the answer is complete: its
    /// cursor becomes the next pull's.
    private func receive(_ index: Int) {
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = recv(devices[index].socket, &buffer, buffer.count, 0)
        if count > 0 {
            devices[index].received += buffer[..<count]
            return
        }
        close(devices[index].socket)
        devices[index].socket = -1
        counts.waiting.subtract(1, ordering: .relaxed)
        let text = String(decoding: devices[index].received, as: UTF8.self)
        devices[index].received = []
        if text.hasPrefix("HTTP/1.1 200"), let cursor = Self.cursor(in: text) {
            devices[index].cursor = cursor
            counts.answered.add(1, ordering: .relaxed)
        } else {
            counts.failed.add(1, ordering: .relaxed)
            usleep(100_000)
        }
        send(index)
    }

    private static func cursor(in text: String) -> String? {
        guard let start = text.range(of: #""cursor":""#) else { return nil }
        let rest = text[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    /// A new connection with the device's live pull.
    private func send(_ index: Int) {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else {
            counts.failed.add(1, ordering: .relaxed)
            return
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let device = devices[index]
        let body =
            #"{"cursor":"\#(device.cursor)","protocolVersion":3,"schemaVersion":"\#(schemaVersion)","#
            + #""site":"\#(device.site)","wait":\#(waitMilliseconds)}"#
        let request =
            "POST /v1/datasets/\(ServerProcess.dataset)/pull HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
            + "Connection: close\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
        let bytes = Array(request.utf8)
        guard connected == 0, Glibc.send(socket, bytes, bytes.count, 0) == bytes.count else {
            close(socket)
            counts.failed.add(1, ordering: .relaxed)
            return
        }
        devices[index].socket = socket
        counts.waiting.add(1, ordering: .relaxed)
    }
}
