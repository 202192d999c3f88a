import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension LiveServer {
    /// `ostore_waiting_pulls` from `/metrics`: the live pulls the server holds now.
    public func waitingPulls() throws -> Int {
        let text = try metricsText()
        let line = text.split(separator: "\n").first { $0.hasPrefix("ostore_waiting_pulls ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }

    /// The body of `GET /metrics`, read over a plain HTTP/1.0 connection (the server closes it
    /// after the answer).
    public func metricsText() throws -> String {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw MetricsUnreadable(reason: "no socket") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw MetricsUnreadable(reason: "cannot connect") }
        let request = Array("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard send(socket, request, request.count, 0) == request.count else {
            throw MetricsUnreadable(reason: "cannot send")
        }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            response += buffer[..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let bodyStart = text.range(of: "\r\n\r\n") else { throw MetricsUnreadable(reason: "no answer") }
        return String(text[bodyStart.upperBound...])
    }
}

struct MetricsUnreadable: Error, CustomStringConvertible {
    let reason: String
    var description: String { "GET /metrics failed: \(reason)" }
}
