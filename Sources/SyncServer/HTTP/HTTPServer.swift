import CMicroHTTPD
import Foundation
import Synchronization

/// What an `HTTPServer` calls for each complete request, on one of libmicrohttpd's polling threads or,
/// for the requests `Configuration.runsOffPollingThread` picks, on a thread of the server's own
/// (``HandlerThreads``); never on an actor, several at once. It must not call the server's `stop()`.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse

/// An ``HTTPHandler`` that may answer later (``HTTPReply/deferred(_:)``), with the request waiting
/// meanwhile without a thread.
public typealias HTTPReplyingHandler = @Sendable (HTTPRequest) -> HTTPReply

/// An HTTP/1.1 server over libmicrohttpd: it owns one `MHD_Daemon`, calls a handler for each request
/// whose body it has received within the configured limits, and stops cleanly.
///
/// ```swift
/// let server = try HTTPServer(configuration: .init(port: 0)) { request in
///     request.path == "/health" ? .text("ok") : .error(.notFound, "No such route.")
/// }
/// print("listening on port \(server.port)")
/// // ...
/// server.stop()  // stops accepting, lets requests in flight finish (up to 10 s), then closes everything
/// ```
///
/// What it guarantees before the handler runs:
/// - the body is complete and at most `maxBodyBytes`: a larger `Content-Length` is answered 413 as soon
///   as the headers arrive, without reading the body; a body that grows past the limit is counted as it
///   arrives and never buffered beyond it. libmicrohttpd 0.9.75 cannot queue a response while it is
///   delivering body data, so the rest of such a body is read and dropped and 413 sent when it ends;
///   a client that sends on far past the limit has its connection closed;
/// - a `Content-Encoding: gzip` body is decompressed, the decompressed size bounded by the same limit;
///   any other content coding is refused with 415.
///
/// Refusals have a JSON body `{"error":{"code":"…","message":"…"}}` (`HTTPResponse.error`). Responses
/// larger than `compressionThreshold` are gzipped for clients that accept it.
///
/// The handler must not keep a strong reference to the server (the server keeps the handler).
/// Manual: https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html ("microhttpd-init",
/// "microhttpd-cb", "microhttpd-requests", "microhttpd-responses").
public final class HTTPServer: Sendable {
    /// The configuration the server was started with.
    public let configuration: Configuration
    /// The port the server listens on: the configured one, or the one the system chose for port 0.
    public let port: UInt16
    private let context: ServerContext
    /// The daemon while it runs; `nil` once stopped.
    private let daemon: Mutex<MHDDaemon?>

    /// Starts listening at once.
    ///
    /// Throws `HTTPServerError` when the configuration is out of range, the address cannot be bound, or
    /// the TLS files cannot be read or are refused.
    public convenience init(configuration: Configuration = Configuration(), handler: @escaping HTTPHandler)
        throws(HTTPServerError)
    {
        try self.init(configuration: configuration, replying: { request in .response(handler(request)) })
    }

    /// Starts listening at once, with a handler that may defer its answers.
    ///
    /// ```swift
    /// let server = try HTTPServer(configuration: configuration, replying: { request in service.reply(to: request) })
    /// ```
    public init(configuration: Configuration = Configuration(), replying handler: @escaping HTTPReplyingHandler)
        throws(HTTPServerError)
    {
        try Self.validate(configuration)
        guard let socketAddress = SocketAddress(address: configuration.address, port: configuration.port) else {
            throw .invalidAddress(configuration.address)
        }
        var tls: (key: String, certificate: String)?
        if let files = configuration.tls {
            guard MHD_is_feature_supported(.FEATURE_TLS) == .YES else { throw .tlsUnavailable }
            let certificate = try Self.readPEM(files.certificatePath)
            tls = (key: try Self.readPEM(files.privateKeyPath), certificate: certificate)
        }
        let context = ServerContext(configuration: configuration, handler: handler)
        let running: MHDDaemon
        do {
            running = try MHDDaemon(
                configuration: configuration, socketAddress: socketAddress, tls: tls, context: context)
        } catch {
            context.deadlines.stop()
            throw error
        }
        self.configuration = configuration
        self.context = context
        self.port = running.port
        self.daemon = Mutex(running)
    }

    /// Stops at once: requests not yet answered are dropped. Call `stop(gracePeriod:)` first to let
    /// them finish.
    deinit {
        stop(gracePeriod: .zero)
    }

    /// Connections open right now (counted from `MHD_OPTION_NOTIFY_CONNECTION`), for metrics.
    public var openConnections: Int {
        context.openConnections.load(ordering: .relaxed)
    }

    /// Requests whose headers have arrived and whose response has not been sent yet.
    public var requestsInFlight: Int {
        context.requestsInFlight.load(ordering: .relaxed)
    }

    /// Whether the server accepts connections: `false` as soon as `stop` has begun.
    public var isRunning: Bool {
        !context.isStopping.load(ordering: .relaxed)
    }

    /// Stops the server cleanly: stops accepting connections (`MHD_quiesce_daemon`), calls the
    /// configuration's `stopping`, waits up to
    /// `gracePeriod` for requests in flight to be answered (their responses say `Connection: close`),
    /// then closes every connection and joins the worker threads (`MHD_stop_daemon`).
    ///
    /// Returns `true` when every request in flight finished within the grace period. Calling it again,
    /// or from several threads, is harmless: later calls wait for the first and return `true`.
    /// It must not be called from the handler (it would wait for itself); that is a precondition failure.
    ///
    /// ```swift
    /// let drained = server.stop(gracePeriod: .seconds(5))
    /// ```
    @discardableResult
    public func stop(gracePeriod: Duration = .seconds(10)) -> Bool {
        precondition(
            pthread_getspecific(handlerThreadKey) == nil,
            "HTTPServer.stop() called from a request handler; it would wait for that handler to return")
        return daemon.withLock { daemon -> Bool in
            guard let running = daemon else { return true }
            context.isStopping.store(true, ordering: .relaxed)
            running.quiesce()
            context.stopping?()
            let deadline = ContinuousClock.now.advanced(by: gracePeriod)
            var drained = true
            while context.requestsInFlight.load(ordering: .acquiring) > 0 {
                guard ContinuousClock.now < deadline else {
                    drained = false
                    break
                }
                usleep(2_000)
            }
            // A connection is suspended while its handler runs, and libmicrohttpd must not stop with
            // one suspended: the handlers still running are waited for, as MHD_stop_daemon itself
            // waits for handlers running on its threads (where those of requests completed from
            // here on run).
            context.closeDispatch()
            running.stop()
            context.deadlines.stop()
            daemon = nil
            return drained
        }
    }

    private static func validate(_ configuration: Configuration) throws(HTTPServerError) {
        func check(_ condition: Bool, _ message: String) throws(HTTPServerError) {
            if !condition { throw .invalidConfiguration(message) }
        }
        try check((1...1024).contains(configuration.threads), "threads must be 1...1024, not \(configuration.threads)")
        try check(
            (configuration.threads...1_000_000).contains(configuration.connectionLimit),
            "connectionLimit must be at least threads (\(configuration.threads); each thread gets an equal share) "
                + "and at most 1000000, not \(configuration.connectionLimit)")
        try check(
            (0...1_000_000).contains(configuration.perIPConnectionLimit),
            "perIPConnectionLimit must be 0 (no limit) or more, not \(configuration.perIPConnectionLimit)")
        try check(
            configuration.connectionMemoryLimit >= 4096,
            "connectionMemoryLimit must be at least 4096 bytes (it holds the request headers), not "
                + "\(configuration.connectionMemoryLimit)")
        try check(
            (0...Int(UInt32.max)).contains(configuration.timeoutSeconds),
            "timeoutSeconds must be 0 (never) or more, not \(configuration.timeoutSeconds)")
        try check(configuration.maxBodyBytes >= 0, "maxBodyBytes must be 0 or more, not \(configuration.maxBodyBytes)")
        try check(
            configuration.bodyMemoryBudget >= configuration.maxBodyBytes,
            "bodyMemoryBudget must hold at least one body of maxBodyBytes (\(configuration.maxBodyBytes)), not "
                + "\(configuration.bodyMemoryBudget)")
        try check(
            (configuration.maxBodyBytes...configuration.bodyMemoryBudget).contains(configuration.bodyMemoryPerShare),
            "bodyMemoryPerShare must hold one body of maxBodyBytes (\(configuration.maxBodyBytes)) and fit in "
                + "bodyMemoryBudget (\(configuration.bodyMemoryBudget)), not \(configuration.bodyMemoryPerShare)")
        try check(
            configuration.headersTimeout > .zero,
            "headersTimeout must be more than zero, not \(configuration.headersTimeout)")
        try check(
            configuration.minimumBodyRate >= 0,
            "minimumBodyRate must be 0 or more, not \(configuration.minimumBodyRate)")
        try check(
            (1...10_000).contains(configuration.maxHeaderFields),
            "maxHeaderFields must be 1...10000, not \(configuration.maxHeaderFields)")
        try check(
            (0...10_000).contains(configuration.maxQueryItems),
            "maxQueryItems must be 0...10000, not \(configuration.maxQueryItems)")
        try check(
            configuration.compressionThreshold >= 0,
            "compressionThreshold must be 0 or more, not \(configuration.compressionThreshold)")
    }

    private static func readPEM(_ path: String) throws(HTTPServerError) -> String {
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN ") else {
                throw HTTPServerError.tlsFileUnreadable(path: path, reason: "it is not PEM text")
            }
            return text
        } catch let error as HTTPServerError {
            throw error
        } catch {
            var reason = (error as NSError).localizedFailureReason ?? error.localizedDescription
            while reason.hasSuffix(".") { reason.removeLast() }
            throw .tlsFileUnreadable(path: path, reason: reason)
        }
    }
}
