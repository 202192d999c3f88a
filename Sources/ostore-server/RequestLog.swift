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
            "time": timestamp(), "method": String(method.prefix(16)),
            "path": String(path.prefix(256)), "status": String(response.status.rawValue),
            "ms": milliseconds(nanoseconds), "bytesOut": String(response.body.count),
            "remote": remote,
        ]
    }

    /// Now, in UTC to the second, as ISO 8601 (`2026-12-07T08:33:03Z`): formatted by hand, since a
    /// formatter made per line cost more than the rest of a pull's answer.
    static func timestamp(_ seconds: time_t = time(nil)) -> String {
        var parts = tm()
        var clock = seconds
        gmtime_r(&clock, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : String(value) }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):"
            + "\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }

    /// `nanoseconds` as milliseconds with three decimals (`3001.392`).
    static func milliseconds(_ nanoseconds: UInt64) -> String {
        let microseconds = (nanoseconds + 500) / 1_000
        let fraction = String(microseconds % 1_000)
        return "\(microseconds / 1_000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    static func write(_ fields: [String: String]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let line = try? encoder.encode(fields) else { return }
        lock.withLock { FileHandle.standardError.write(line + Data("\n".utf8)) }
    }
}
