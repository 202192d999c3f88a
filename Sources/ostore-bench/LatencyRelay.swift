import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 and a free port that hands every byte on half a round trip after it
/// arrived, in both directions, so clients on loopback wait for the server as they would across a
/// network with that round-trip time (bandwidth is not limited). Each client connection gets its
/// own connection to the server, kept as long as the client keeps its own (keep-alive intact).
///
/// ```swift
/// let relay = try LatencyRelay(upstreamPort: server.port, roundTrip: .milliseconds(20))
/// // clients talk to http://127.0.0.1:\(relay.port)
/// ```
///
/// `@unchecked Sendable`: `port` is set once; the listener is closed once (`stop`), and each
/// connection's sockets belong to its two pipes' threads, which end when either side closes.
final class LatencyRelay: @unchecked Sendable {
    let port: UInt16
    private let listener: RelaySocket
    private let oneWay: Duration

    init(upstreamPort: UInt16, roundTrip: Duration) throws {
        listener = try RelaySocket.listening()
        port = try listener.localPort()
        oneWay = roundTrip / 2
        let listener = listener
        let oneWay = oneWay
        Thread {
            while let client = listener.accept() {
                guard let server = RelaySocket.connected(to: upstreamPort) else { continue }
                DelayedPipe.start(from: client, to: server, after: oneWay)
                DelayedPipe.start(from: server, to: client, after: oneWay)
            }
        }.start()
    }

    deinit { stop() }

    /// Closes the listener; open connections end when their client or the server closes them.
    func stop() { listener.close() }
}

/// One direction of a relayed connection: a thread reads what arrives and queues it with the time
/// it is due, another writes it out then; the end of the stream is passed on the same way.
///
/// `@unchecked Sendable`: `queue` is read and written only under `condition`.
private final class DelayedPipe: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [(due: ContinuousClock.Instant, bytes: [UInt8]?)] = []

    static func start(from source: RelaySocket, to destination: RelaySocket, after delay: Duration) {
        let pipe = DelayedPipe()
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = source.read(into: &buffer)
                let due = ContinuousClock.now + delay
                pipe.condition.withLock {
                    pipe.queue.append((due, count > 0 ? Array(buffer[0..<count]) : nil))
                    pipe.condition.signal()
                }
                if count <= 0 { return }
            }
        }.start()
        Thread {
            while true {
                let next = pipe.condition.withLock {
                    while pipe.queue.isEmpty { pipe.condition.wait() }
                    return pipe.queue.removeFirst()
                }
                let wait = next.due - ContinuousClock.now
                if wait > .zero { Thread.sleep(forTimeInterval: milliseconds(wait) / 1000) }
                guard let bytes = next.bytes, destination.write(bytes) else {
                    // The end of this direction: the other side learns it as the network would tell it.
                    destination.shutDownWriting()
                    source.shutDownReading()
                    return
                }
            }
        }.start()
    }
}

/// A TCP socket of the relay (POSIX sockets); closed when released.
///
/// `@unchecked Sendable`: the descriptor is set once; `close` runs once (guarded by `lock`), and
/// reads, writes and shutdowns of one descriptor from two threads are what POSIX sockets allow.
private final class RelaySocket: @unchecked Sendable {
    private let descriptor: Int32
    private let lock = NSLock()
    private var closed = false

    private init(_ descriptor: Int32) {
        self.descriptor = descriptor
        var yes: Int32 = 1
        // Each chunk goes out when it is due, not held back to fill a segment (Nagle).
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    static func listening() throws -> RelaySocket {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw BenchmarkFailure(description: "the latency relay: socket() failed") }
        let relay = RelaySocket(descriptor)
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            throw BenchmarkFailure(description: "the latency relay could not listen on 127.0.0.1 (errno \(errno))")
        }
        return relay
    }

    static func connected(to port: UInt16) -> RelaySocket? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let relay = RelaySocket(descriptor)
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return connected == 0 ? relay : nil
    }

    func localPort() throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let found = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard found == 0 else { throw BenchmarkFailure(description: "the latency relay has no port (errno \(errno))") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// The next connection, or nil once the listener is closed.
    func accept() -> RelaySocket? {
        while true {
            let accepted = Glibc.accept(descriptor, nil, nil)
            if accepted >= 0 { return RelaySocket(accepted) }
            guard errno == EINTR else { return nil }
        }
    }

    /// Bytes read into `buffer`: 0 at the end of the stream, negative on an error.
    func read(into buffer: inout [UInt8]) -> Int {
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 || errno != EINTR { return count }
        }
    }

    /// Whether all of `bytes` were written.
    func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 {
                guard errno == EINTR else { return false }
                continue
            }
            offset += written
        }
        return true
    }

    func shutDownWriting() { shutdown(descriptor, Int32(SHUT_WR)) }
    func shutDownReading() { shutdown(descriptor, Int32(SHUT_RD)) }

    func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            shutdown(descriptor, Int32(SHUT_RDWR))
            Glibc.close(descriptor)
        }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
