import Foundation
import SyncProtocol
@_exported import TestSupport

@testable import SyncServer

enum RawHTTPError: Error, CustomStringConvertible {
    case connectFailed(Int32)
    case sendFailed(Int32)
    case receiveFailed(Int32)
    case timedOut(String)
    case closedByPeer(received: Int)
    case malformed(String)

    var description: String {
        switch self {
        case .connectFailed(let code): "connect failed: \(String(cString: strerror(code)))"
        case .sendFailed(let code): "send failed: \(String(cString: strerror(code)))"
        case .receiveFailed(let code): "recv failed: \(String(cString: strerror(code)))"
        case .timedOut(let what): "timed out waiting for \(what)"
        case .closedByPeer(let received): "connection closed by the server after \(received) bytes"
        case .malformed(let what): "malformed response: \(what)"
        }
    }
}

/// A response as read off the socket.
struct RawHTTPResponse {
    var status: Int
    var headers: HTTPHeaders
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The `{"error":{"code":…}}` code of a refusal.
    var errorCode: String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return nil }
        return error["code"] as? String
    }
}

/// A raw HTTP/1.1 client over a blocking POSIX socket, so tests send exact bytes (hostile requests
/// included) and read exactly what the server wrote. Not thread-safe; one test uses one connection.
final class RawHTTPConnection {
    private var descriptor: Int32
    /// Bytes received and not consumed by a response yet.
    private var pending = Data()

    /// Connects to `host:port` (IPv4), from `source` when given (another loopback address, so a test
    /// can play clients of several addresses).
    init(port: UInt16, host: String = "127.0.0.1", from source: String? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTPError.connectFailed(errno) }
        let bound = source.map { source in Self.withAddress(source, port: 0) { bind(descriptor, $0, $1) } } ?? 0
        guard bound == 0, Self.withAddress(host, port: port, { connect(descriptor, $0, $1) }) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw RawHTTPError.connectFailed(code)
        }
    }

    /// `body` with `host:port` as an IPv4 `sockaddr` and its length.
    private static func withAddress(
        _ host: String, port: UInt16, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    deinit {
        close()
    }

    func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    /// Sends every byte (`MSG_NOSIGNAL`: a server that closed early gives an error, not SIGPIPE).
    func send(_ bytes: Data) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { raw in
                Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw RawHTTPError.sendFailed(errno) }
            offset += sent
        }
    }

    func send(_ text: String) throws {
        try send(Data(text.utf8))
    }

    /// Sends a request with `Host` and, when there is a body, `Content-Length` added.
    func sendRequest(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: Data = Data()
    ) throws {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers {
            head += "\(name): \(value)\r\n"
        }
        if !body.isEmpty && !headers.contains(where: { $0.0.lowercased() == "content-length" }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        try send(Data(head.utf8) + body)
    }

    /// Reads one response: status line, headers, then a body framed by `Content-Length`, chunked
    /// transfer coding, or the end of the connection (none for a response to `HEAD`).
    func readResponse(timeout: Duration = .seconds(5), toHead: Bool = false) throws -> RawHTTPResponse {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        let separator = Data("\r\n\r\n".utf8)
        var headEnd: Range<Data.Index>?
        while true {
            headEnd = pending.range(of: separator)
            if headEnd != nil { break }
            guard try receiveMore(until: deadline, what: "the response headers") else {
                throw RawHTTPError.closedByPeer(received: pending.count)
            }
        }
        let head = String(decoding: pending[pending.startIndex..<headEnd!.lowerBound], as: UTF8.self)
        pending = Data(pending[headEnd!.upperBound...])
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw RawHTTPError.malformed("status line \(head.prefix(80))")
        }
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw RawHTTPError.malformed("header \(line)") }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Data()
        if toHead || status == 204 || status == 304 || (100..<200).contains(status) {
            // no body
        } else if headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true {
            while true {
                let line = try readLine(until: deadline)
                guard let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16)
                else { throw RawHTTPError.malformed("chunk size \(line)") }
                if size == 0 {
                    while try !readLine(until: deadline).isEmpty {}  // trailers
                    break
                }
                body.append(try readExactly(size, until: deadline))
                _ = try readExactly(2, until: deadline)
            }
        } else if let length = headers["Content-Length"].flatMap({ Int($0) }) {
            body = try readExactly(length, until: deadline)
        } else {
            while try receiveMore(until: deadline, what: "the end of the body") {}
            body = pending
            pending = Data()
        }
        return RawHTTPResponse(status: status, headers: headers, body: body)
    }

    /// Whether the server closes the connection (recv returns 0 or a reset) within `timeout`.
    func waitForClose(timeout: Duration = .seconds(5)) -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        do {
            while try receiveMore(until: deadline, what: "the connection to close") {}
            return true
        } catch RawHTTPError.receiveFailed {
            return true
        } catch {
            return false
        }
    }

    private func readLine(until deadline: ContinuousClock.Instant) throws -> String {
        let crlf = Data("\r\n".utf8)
        while pending.range(of: crlf) == nil {
            guard try receiveMore(until: deadline, what: "a line") else {
                throw RawHTTPError.closedByPeer(received: pending.count)
            }
        }
        let end = pending.range(of: crlf)!
        let line = String(decoding: pending[pending.startIndex..<end.lowerBound], as: UTF8.self)
        pending = Data(pending[end.upperBound...])
        return line
    }

    private func readExactly(_ count: Int, until deadline: ContinuousClock.Instant) throws -> Data {
        while pending.count < count {
            guard try receiveMore(until: deadline, what: "\(count) bytes of body") else {
                throw RawHTTPError.closedByPeer(received: pending.count)
            }
        }
        let bytes = Data(pending.prefix(count))
        pending = Data(pending.dropFirst(count))
        return bytes
    }

    /// Waits for bytes (poll) and appends them to `pending`; `false` when the server closed.
    private func receiveMore(until deadline: ContinuousClock.Instant, what: String) throws -> Bool {
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { throw RawHTTPError.timedOut(what) }
        let milliseconds = Int32(
            clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1
        )
        var descriptorSet = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptorSet, 1, milliseconds)
        guard ready > 0 else {
            if ready < 0 && errno == EINTR { return true }
            throw RawHTTPError.timedOut(what)
        }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let received = recv(descriptor, &buffer, buffer.count, 0)
        if received == 0 { return false }
        guard received > 0 else { throw RawHTTPError.receiveFailed(errno) }
        pending.append(contentsOf: buffer[0..<received])
        return true
    }
}

/// Compresses with the system's `gzip`, independent of the server's zlib code.
func gzipped(_ data: Data) throws -> Data {
    let result = try run("/bin/gzip", ["-c", "-n"], input: data)
    precondition(result.status == 0, "gzip failed")
    return result.output
}

/// Decompresses with the system's `gzip`.
func gunzipped(_ data: Data) throws -> Data {
    let result = try run("/bin/gzip", ["-d", "-c"], input: data)
    precondition(result.status == 0, "gzip -d failed: \(String(decoding: result.error, as: UTF8.self))")
    return result.output
}

extension SyncService {
    /// A pull of dataset `family` with `cursor`, handled in-process (for cursors the HTTP tests
    /// cannot easily forge), by `site` (zeros unless given).
    func pull(
        family token: String, cursor: String?, site: SiteID = SiteID(bytes: Data(count: 16))!, limit: Int? = nil
    ) throws -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "Content-Type", value: "application/json")
        let body = try ProtocolJSON.encode(
            PullRequest(
                protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: site, cursor: cursor, limit: limit))
        return handle(HTTPRequest(method: "POST", path: "/v1/datasets/family/pull", headers: headers, body: body))
    }
}

extension SyncStorage {
    /// Records `definition` as version `version` of `dataset`'s schema, as a device's hello
    /// announcing it does.
    func recordDefinition(_ definition: SchemaDefinition, version: SchemaVersion, dataset: String) throws {
        _ = try recordSchema(
            SchemaDescription(
                version: version, fingerprint: definition.fingerprint,
                tables: Dictionary(uniqueKeysWithValues: definition.tables.map { ($0.name, $0.columns.map(\.name)) }),
                definition: definition),
            dataset: dataset, mayMoveDataset: true)
    }
}
