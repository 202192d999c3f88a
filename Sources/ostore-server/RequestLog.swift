import Foundation
import SyncServer

/// One JSON object per line on standard error for every request: time, method, path, status,
/// duration and sizes. Headers are never logged, so a token never reaches the log.
enum RequestLog {
    private static let lock = NSLock()

    static func request(_ request: HTTPRequest, _ response: HTTPResponse, nanoseconds: UInt64) {
        var fields = line(
            method: request.method, path: request.path, remote: request.remoteAddress, response,
            nanoseconds: nanoseconds)
        fields["bytesIn"] = String(request.body.count)
        write(fields)
    }

    /// A request answered on its head or body without reaching the service's handler.
    static func refused(_ head: HTTPRequestHead, _ response: HTTPResponse, nanoseconds: UInt64) {
        var fields = line(
            method: head.method, path: head.path, remote: head.remoteAddress, response, nanoseconds: nanoseconds)
        fields["refused"] = "true"
        write(fields)
    }

    private static func line(
        method: String, path: String, remote: String, _ response: HTTPResponse, nanoseconds: UInt64
    ) -> [String: String] {
        [
            "time": ISO8601DateFormatter().string(from: Date()), "method": String(method.prefix(16)),
            "path": String(path.prefix(256)), "status": String(response.status.rawValue),
            "ms": String(format: "%.3f", Double(nanoseconds) / 1e6), "bytesOut": String(response.body.count),
            "remote": remote,
        ]
    }

    static func write(_ fields: [String: String]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let line = try? encoder.encode(fields) else { return }
        lock.withLock { FileHandle.standardError.write(line + Data("\n".utf8)) }
    }
}
