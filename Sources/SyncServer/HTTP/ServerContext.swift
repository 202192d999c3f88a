import Foundation
import Synchronization

/// Everything libmicrohttpd's callbacks need, reached through their `void *cls`
/// (`Unmanaged.passUnretained`; the `HTTPServer` keeps it alive until `MHD_stop_daemon` has returned).
///
/// `Sendable` without `@unchecked`: its stored properties are immutable `Sendable` values, atomics and a
/// mutex, because the callbacks run on libmicrohttpd's worker threads, several at once.
final class ServerContext: Sendable {
    let handler: HTTPHandler
    let maxBodyBytes: Int
    let compressionThreshold: Int
    private let logSink: (@Sendable (String) -> Void)?
    /// Connections between `MHD_CONNECTION_NOTIFY_STARTED` and `MHD_CONNECTION_NOTIFY_CLOSED`.
    let openConnections = Atomic<Int>(0)
    /// Requests between the access handler's first call and `MHD_OPTION_NOTIFY_COMPLETED`.
    let requestsInFlight = Atomic<Int>(0)
    /// Set when `stop()` begins: responses then carry `Connection: close`.
    let isStopping = Atomic<Bool>(false)
    /// libmicrohttpd's log while the daemon starts, to explain a failure; `nil` once started.
    private let startupLog = Mutex<[String]?>([])

    init(configuration: HTTPServer.Configuration, handler: @escaping HTTPHandler) {
        self.handler = handler
        maxBodyBytes = configuration.maxBodyBytes
        compressionThreshold = configuration.compressionThreshold
        logSink = configuration.log
    }

    /// One line of libmicrohttpd's log.
    func log(_ message: String) {
        startupLog.withLock { lines in
            if lines != nil, lines!.count < 32 {
                lines!.append(message)
            }
        }
        logSink?(message)
    }

    /// The lines logged while starting; later lines only go to the configuration's `log`.
    func endStartup() -> [String] {
        startupLog.withLock { lines in
            defer { lines = nil }
            return lines ?? []
        }
    }
}
