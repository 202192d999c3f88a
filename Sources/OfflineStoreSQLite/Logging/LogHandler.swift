import Foundation

/// How much a log message matters.
public enum LogLevel: Int, Comparable, Sendable, CustomStringConvertible {
    case trace, debug, info, notice, warning, error

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// Where the library's log messages go. The library never prints; it is
/// silent unless the app supplies a handler in ``Configuration/logHandler``.
///
/// ```swift
/// struct PrintingHandler: LogHandler {
///     func log(level: LogLevel, _ message: String, metadata: [String: String]) {
///         print(level, message, metadata)
///     }
/// }
/// var configuration = Configuration()
/// configuration.logHandler = PrintingHandler()
/// ```
public protocol LogHandler: Sendable {
    /// Messages below this level are not built at all.
    var minimumLevel: LogLevel { get }

    /// Receives one message with structured metadata (path, SQL, codes, ...).
    func log(level: LogLevel, _ message: String, metadata: [String: String])
}

extension LogHandler {
    public var minimumLevel: LogLevel { .info }
}

/// Writes one line per message to standard error: what the executables use.
public struct StandardErrorLogHandler: LogHandler {
    public let minimumLevel: LogLevel
    public let label: String

    public init(label: String, minimumLevel: LogLevel = .info) {
        self.label = label
        self.minimumLevel = minimumLevel
    }

    public func log(level: LogLevel, _ message: String, metadata: [String: String]) {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let line = "\(label) \(level): \(message)\(fields.isEmpty ? "" : " " + fields)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension Optional where Wrapped == any LogHandler {
    /// Logs only when a handler is set and wants this level; the message is not built otherwise.
    package func log(
        _ level: LogLevel, _ message: @autoclosure () -> String, metadata: @autoclosure () -> [String: String] = [:]
    ) {
        guard let handler = self, level >= handler.minimumLevel else { return }
        handler.log(level: level, message(), metadata: metadata())
    }
}
