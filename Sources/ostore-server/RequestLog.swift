import Foundation
import SyncServer

/// One JSON object per line on standard error for every request: time, method, path, status,
/// duration and sizes. Headers are never logged, so a token never reaches the log.
enum RequestLog {
    private static let lock = NSLock()

    static func request(_ request: HTTPRequest, _ response: HTTPResponse, nanoseconds: UInt64) {
        write([
            "time": ISO8601DateFormatter().string(from: Date()), "method": String(request.method.prefix(16)),
            "path": String(request.path.prefix(256)), "status": String(response.status.rawValue),
            "ms": String(format: "%.3f", Double(nanoseconds) / 1e6), "bytesIn": String(request.body.count),
            "bytesOut": String(response.body.count), "remote": request.remoteAddress,
        ])
    }

    /// A request answered on its head or body without reaching the service's handler.
    static func refused(_ head: HTTPRequestHead, _ response: HTTPResponse, nanoseconds: UInt64) {
        write([
            "time": ISO8601DateFormatter().string(from: Date()), "method": String(head.method.prefix(16)),
            "path": String(head.path.prefix(256)), "status": String(response.status.rawValue),
            "ms": String(format: "%.3f", Double(nanoseconds) / 1e6), "bytesOut": String(response.body.count),
            "remote": head.remoteAddress, "refused": "true",
        ])
    }

    static func write(_ fields: [String: String]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let line = try? encoder.encode(fields) else { return }
        lock.withLock { FileHandle.standardError.write(line + Data("\n".utf8)) }
    }
}
