import CMicroHTTPD
import Foundation

/// Owns one running `MHD_Daemon*` and the memory it was given (bind address, TLS key and certificate,
/// logger, request-line sink), which libmicrohttpd may read until `MHD_stop_daemon` returns.
///
/// Not `Sendable`: `HTTPServer` keeps it inside a mutex.
/// Manual, "microhttpd-init": https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dinit
final class MHDDaemon {
    private var daemon: OpaquePointer?
    /// The listening socket `MHD_quiesce_daemon` handed back; ours to close after `MHD_stop_daemon`.
    private var quiescedSocket: Int32 = -1
    private let address: UnsafeMutablePointer<sockaddr_storage>
    private let logger: UnsafeMutablePointer<cmhd_logger>
    private let targetSink: UnsafeMutablePointer<cmhd_target_sink>
    private let tlsKey: UnsafeMutablePointer<CChar>?
    private let tlsCertificate: UnsafeMutablePointer<CChar>?
    /// The port the daemon is bound to.
    let port: UInt16

    /// Starts the daemon: internal polling thread(s) with epoll (poll when epoll is missing), and the
    /// inter-thread channel `MHD_quiesce_daemon` needs with a thread pool.
    init(
        configuration: HTTPServer.Configuration, socketAddress: SocketAddress, tls: (key: String, certificate: String)?,
        context: ServerContext
    ) throws(HTTPServerError) {
        // Everything is set up in locals and stored only once the daemon runs, so a failure frees it here
        // and leaves no half-built object for deinit.
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        let address = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: 1)
        address.initialize(to: socketAddress.storage)
        let logger = UnsafeMutablePointer<cmhd_logger>.allocate(capacity: 1)
        logger.initialize(to: cmhd_logger(log: mhdLog, context: contextPointer))
        let targetSink = UnsafeMutablePointer<cmhd_target_sink>.allocate(capacity: 1)
        targetSink.initialize(to: cmhd_target_sink(received: mhdTargetReceived, context: contextPointer))
        let tlsKey = tls.flatMap { strdup($0.key) }
        let tlsCertificate = tls.flatMap { strdup($0.certificate) }

        // Suspend and resume: handlers run on threads of their own (ServerContext.access).
        var flags =
            MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_ITC.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        flags |= MHD_is_feature_supported(.FEATURE_EPOLL) == .YES ? MHD_USE_EPOLL.rawValue : MHD_USE_POLL.rawValue
        if socketAddress.isIPv6 {
            flags |= MHD_USE_IPv6.rawValue
        }
        var settings = cmhd_daemon_settings()
        settings.flags = flags
        settings.thread_pool_size = UInt32(configuration.threads)
        settings.connection_limit = UInt32(configuration.connectionLimit)
        settings.per_ip_connection_limit = UInt32(configuration.perIPConnectionLimit)
        settings.connection_memory_limit = configuration.connectionMemoryLimit
        settings.connection_timeout_seconds = UInt32(configuration.timeoutSeconds)
        settings.access_handler = mhdAccessHandler
        settings.access_handler_context = contextPointer
        settings.request_completed = mhdRequestCompleted
        settings.request_completed_context = contextPointer
        settings.connection_notify = mhdConnectionNotify
        settings.connection_notify_context = contextPointer
        settings.target_sink = UnsafePointer(targetSink)
        settings.listen_backlog = UInt32(configuration.listenBacklog)
        settings.logger = UnsafePointer(logger)
        settings.tls_key_pem = UnsafePointer(tlsKey)
        settings.tls_cert_pem = UnsafePointer(tlsCertificate)

        errno = 0
        let started = address.withMemoryRebound(to: sockaddr.self, capacity: 1) { socket in
            settings.address = UnsafePointer(socket)
            return cmhd_start_daemon(&settings)
        }
        let startErrno = errno
        let log = context.endStartup()
        guard let started else {
            Self.release(address: address, logger: logger, targetSink: targetSink, secrets: [tlsKey, tlsCertificate])
            throw Self.classify(errno: startErrno, log: log, configuration: configuration, tls: tls != nil)
        }
        self.daemon = started
        self.address = address
        self.logger = logger
        self.targetSink = targetSink
        self.tlsKey = tlsKey
        self.tlsCertificate = tlsCertificate
        self.port = cmhd_daemon_bound_port(started)
    }

    deinit {
        stop()
        Self.release(address: address, logger: logger, targetSink: targetSink, secrets: [tlsKey, tlsCertificate])
    }

    /// Stops accepting connections (`MHD_quiesce_daemon`); connections already open carry on.
    ///
    /// The listening socket MHD hands back still listens, so the kernel would go on completing handshakes
    /// that nobody accepts. `shutdown` turns it into a closed socket at once (new clients are refused,
    /// those waiting in the backlog reset) while the descriptor stays open, as the manual requires until
    /// `MHD_stop_daemon` has returned.
    func quiesce() {
        guard let daemon, quiescedSocket < 0 else { return }
        quiescedSocket = MHD_quiesce_daemon(daemon)
        if quiescedSocket >= 0 {
            shutdown(quiescedSocket, Int32(SHUT_RDWR))
        }
    }

    /// `MHD_stop_daemon`: closes every connection and joins the worker threads (waiting for handlers
    /// that are running), then closes the quiesced listening socket.
    func stop() {
        guard let daemon else { return }
        MHD_stop_daemon(daemon)
        self.daemon = nil
        if quiescedSocket >= 0 {
            close(quiescedSocket)
            quiescedSocket = -1
        }
    }

    private static func release(
        address: UnsafeMutablePointer<sockaddr_storage>, logger: UnsafeMutablePointer<cmhd_logger>,
        targetSink: UnsafeMutablePointer<cmhd_target_sink>, secrets: [UnsafeMutablePointer<CChar>?]
    ) {
        targetSink.deinitialize(count: 1)
        targetSink.deallocate()
        address.deinitialize(count: 1)
        address.deallocate()
        logger.deinitialize(count: 1)
        logger.deallocate()
        for case let secret? in secrets {
            memset(secret, 0, strlen(secret))
            free(secret)
        }
    }

    /// Turns a failed `MHD_start_daemon` into an error saying what to do. libmicrohttpd reports the cause
    /// only in its log ("Failed to bind to port 8080: Address already in use"); errno usually survives too.
    private static func classify(errno code: Int32, log: [String], configuration: HTTPServer.Configuration, tls: Bool)
        -> HTTPServerError
    {
        let text = log.joined(separator: "; ")
        func logged(_ phrase: String) -> Bool { text.localizedCaseInsensitiveContains(phrase) }
        if code == EADDRINUSE || logged("Address already in use") {
            return .addressInUse(address: configuration.address, port: configuration.port)
        }
        if code == EACCES || logged("Permission denied") {
            return .permissionDenied(address: configuration.address, port: configuration.port)
        }
        if code == EADDRNOTAVAIL || logged("Cannot assign requested address") {
            return .addressNotAvailable(address: configuration.address)
        }
        if tls && (logged("key") || logged("cert") || logged("TLS") || logged("GnuTLS")) {
            return .tlsRejected(text)
        }
        if text.isEmpty {
            let reason = code == 0 ? "no reason given" : String(cString: strerror(code))
            return .startFailed("libmicrohttpd refused to start (\(reason))")
        }
        return .startFailed(text)
    }
}
