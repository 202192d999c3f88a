import Foundation
import Synchronization

/// Everything libmicrohttpd's callbacks need, reached through their `void *cls`
/// (`Unmanaged.passUnretained`; the `HTTPServer` keeps it alive until `MHD_stop_daemon` has returned).
///
/// `Sendable` without `@unchecked`: its stored properties are immutable `Sendable` values, atomics and a
/// mutex, because the callbacks run on libmicrohttpd's worker threads, and handlers on threads of their
/// own, several at once.
final class ServerContext: Sendable {
    let handler: HTTPReplyingHandler
    let runsOffPollingThread: @Sendable (HTTPRequest) -> Bool
    let maxBodyBytes: Int
    let rules: RequestRules
    let bodyBudget: BodyBudget
    let deadlines: ConnectionDeadlines
    let requestRefused: (@Sendable (HTTPRequestHead, HTTPResponse, UInt64) -> Void)?
    let compressionThreshold: Int
    let stopping: (@Sendable () -> Void)?
    private let logSink: (@Sendable (String) -> Void)?
    /// Connections between `MHD_CONNECTION_NOTIFY_STARTED` and `MHD_CONNECTION_NOTIFY_CLOSED`.
    let openConnections = Atomic<Int>(0)
    /// Requests between the access handler's first call and `MHD_OPTION_NOTIFY_COMPLETED`.
    let requestsInFlight = Atomic<Int>(0)
    /// Set when `stop()` begins: responses then carry `Connection: close`.
    let isStopping = Atomic<Bool>(false)
    /// Where handlers run, their connections suspended meanwhile, as many at once as there are
    /// polling threads: see ``HandlerThreads``.
    let handlerThreads: HandlerThreads
    /// Handlers running on ``handlerThreads``, each with its connection suspended until it has
    /// queued the answer and resumed the connection, and whether more may start there: libmicrohttpd
    /// forbids `MHD_stop_daemon` with a connection suspended, so `stop` closes this first and waits
    /// for them; a request completed after that runs its handler on the polling thread, which
    /// `MHD_stop_daemon` joins.
    private let dispatched = Mutex<(running: Int, isClosed: Bool)>((0, false))
    /// libmicrohttpd's log while the daemon starts, to explain a failure; `nil` once started.
    private let startupLog = Mutex<[String]?>([])

    init(configuration: HTTPServer.Configuration, handler: @escaping HTTPReplyingHandler) {
        self.handler = handler
        runsOffPollingThread = configuration.runsOffPollingThread
        rules = RequestRules(
            admit: configuration.admit, maxHeaderFields: configuration.maxHeaderFields,
            maxQueryItems: configuration.maxQueryItems, requiresContentLength: configuration.requiresContentLength)
        bodyBudget = BodyBudget(bytes: configuration.bodyMemoryBudget, perShare: configuration.bodyMemoryPerShare)
        requestRefused = configuration.requestRefused
        deadlines = ConnectionDeadlines(
            headersTimeout: configuration.headersTimeout, minimumBodyRate: configuration.minimumBodyRate)
        handlerThreads = HandlerThreads(limit: configuration.threads)
        maxBodyBytes = configuration.maxBodyBytes
        compressionThreshold = configuration.compressionThreshold
        stopping = configuration.stopping
        logSink = configuration.log
    }

    /// Counts a handler about to run on ``handlerThreads``; false once ``closeDispatch()`` has begun.
    func beginDispatch() -> Bool {
        dispatched.withLock { state in
            guard !state.isClosed else { return false }
            state.running += 1
            return true
        }
    }

    /// A handler of ``beginDispatch()`` has resumed its connection.
    func endDispatch() {
        dispatched.withLock { $0.running -= 1 }
    }

    /// Lets no more handlers start on ``handlerThreads`` and waits for those running to resume
    /// their connections.
    func closeDispatch() {
        dispatched.withLock { $0.isClosed = true }
        while dispatched.withLock({ $0.running }) > 0 {
            usleep(2_000)
        }
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

/// What the HTTP layer checks of each request's head, from the configuration.
struct RequestRules: Sendable {
    let admit: @Sendable (HTTPRequestHead) -> HTTPAdmission
    let maxHeaderFields: Int
    let maxQueryItems: Int
    let requiresContentLength: Bool
}
