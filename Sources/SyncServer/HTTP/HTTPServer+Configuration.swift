extension HTTPServer {
    /// How an `HTTPServer` listens and what it accepts.
    ///
    /// The defaults suit a local reference server: loopback only, an ephemeral port, a few threads and
    /// 8 MiB bodies.
    ///
    /// ```swift
    /// var configuration = HTTPServer.Configuration(address: "0.0.0.0", port: 8443)
    /// configuration.maxBodyBytes = 32 << 20
    /// configuration.tls = .init(certificatePath: "/etc/ostore/cert.pem", privateKeyPath: "/etc/ostore/key.pem")
    /// let server = try HTTPServer(configuration: configuration, handler: handle)
    /// ```
    ///
    /// Each field maps to a libmicrohttpd option of `MHD_start_daemon`; see the manual,
    /// "microhttpd-const" and "microhttpd-init"
    /// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dconst).
    public struct Configuration: Sendable {
        /// The IPv4 or IPv6 address to bind, as a literal (`127.0.0.1`, `0.0.0.0`, `::1`, `::`).
        /// `MHD_OPTION_SOCK_ADDR`.
        public var address: String
        /// The TCP port; 0 lets the kernel choose one, read back from `HTTPServer.port`
        /// (`MHD_DAEMON_INFO_BIND_PORT`).
        public var port: UInt16
        /// Worker threads polling connections (`MHD_OPTION_THREAD_POOL_SIZE`), and the most handlers
        /// running at once on the server's own threads (``HandlerThreads``, for the requests
        /// `runsOffPollingThread` picks; more wait their turn). A handler run on a polling thread holds
        /// up that thread's other connections while it runs.
        public var threads: Int
        /// Most connections open at once (`MHD_OPTION_CONNECTION_LIMIT`). Each needs a file descriptor: the
        /// process's `RLIMIT_NOFILE` must allow them. libmicrohttpd divides it evenly
        /// among the threads, so it must be at least `threads`; a thread at its share stops accepting, and
        /// new connections wait in the kernel's listen queue until one closes.
        public var connectionLimit: Int
        /// Most connections open at once from one IP address (`MHD_OPTION_PER_IP_CONNECTION_LIMIT`); a
        /// connection over it is closed as soon as it is accepted. 0 means no per-address limit.
        public var perIPConnectionLimit: Int
        /// Memory per connection for the request line, headers and read buffer
        /// (`MHD_OPTION_CONNECTION_MEMORY_LIMIT`). Request headers larger than this are refused by
        /// libmicrohttpd with 431 (or 414 for a long URL). The body does not live here.
        public var connectionMemoryLimit: Int
        /// Seconds a connection may stay idle before it is closed (`MHD_OPTION_CONNECTION_TIMEOUT`);
        /// 0 means never. Every byte restarts it; `headersTimeout` and `minimumBodyRate` bound whole
        /// requests.
        public var timeoutSeconds: Int
        /// How long a connection has to deliver a request's complete headers, from when it opened or
        /// its previous answer was sent; a connection that has not is shut down without an answer
        /// (``ConnectionDeadlines``). It is also the grace a body has before `minimumBodyRate` applies.
        public var headersTimeout: Duration = .seconds(10)
        /// The average rate, in bytes a second, at which a body must arrive once `headersTimeout` has
        /// passed since its headers; a slower one has its connection shut down. 0 lets bodies take any
        /// time (libmicrohttpd's idle timeout still applies).
        public var minimumBodyRate: Int = 16 * 1024
        /// The memory all request bodies in flight may take together (``BodyBudget``): a body that does
        /// not fit is answered `503 unavailable` with `Retry-After` (at once when its `Content-Length`
        /// does not fit, when it ends for a chunked or compressed one). At least `maxBodyBytes`.
        public var bodyMemoryBudget: Int = 256 * 1024 * 1024
        /// The part of `bodyMemoryBudget` the bodies of one share (what `admit` names, a token) may
        /// hold together; more are answered `503 unavailable` like a spent budget. At least
        /// `maxBodyBytes`.
        public var bodyMemoryPerShare: Int = 64 * 1024 * 1024
        /// The most header fields a request may have; more are answered `431 headers_too_large`. The
        /// headers must also fit in `connectionMemoryLimit`, where libmicrohttpd keeps each field's text
        /// and about 56 bytes of its own (beyond that it answers 431 itself, with an HTML body).
        public var maxHeaderFields: Int = 100
        /// Whether a body must come with `Content-Length`: a chunked one is then answered
        /// `411 length_required` on its headers, and libmicrohttpd never parses a chunk (its own answers
        /// to broken chunks are HTML, not the protocol's JSON).
        public var requiresContentLength = false
        /// The most query parameters a request target may have; more are answered `414 uri_too_long`.
        public var maxQueryItems: Int = 64
        /// The kernel's queue of connections not yet accepted (`MHD_OPTION_LISTEN_BACKLOG_SIZE`); 0 keeps
        /// libmicrohttpd's default (`SOMAXCONN`).
        public var listenBacklog: Int = 0
        /// Decides from a request's head, before any of its body is read, whether to read it: a refusal
        /// is answered at once, so a request without a valid token costs the server its headers only.
        /// Runs on a polling thread after the HTTP layer's own checks (framing, declared size, content
        /// coding); admits every request by default.
        public var admit: @Sendable (HTTPRequestHead) -> HTTPAdmission = { _ in .admit() }
        /// Told of each request answered without its handler: refused on its head (by the HTTP layer's
        /// own checks or by `admit`) or on its body (too large, not gzip, over the budget). For a
        /// request log, with the nanoseconds since the headers arrived; called on a polling thread.
        public var requestRefused: (@Sendable (HTTPRequestHead, HTTPResponse, UInt64) -> Void)?
        /// Called once when ``HTTPServer/stop(gracePeriod:)`` begins, once no new connection is
        /// accepted: where a handler sends the answers it deferred without a bound of its own
        /// (live pulls: ``SyncService/answerWaitingPulls()``), which `stop` would otherwise wait for.
        public var stopping: (@Sendable () -> Void)?
        /// The largest request body accepted, counted both as sent and after gzip decompression. A larger
        /// `Content-Length` is refused with 413 before any of the body is read. A body that grows past it
        /// (chunked, or compressed) is never buffered beyond it: the rest is read and dropped and 413 sent
        /// when it ends, and a client that sends more than another `max(maxBodyBytes, 64 KiB)` has its
        /// connection closed.
        public var maxBodyBytes: Int
        /// Responses whose body is larger than this many bytes are gzip-compressed for clients that send
        /// `Accept-Encoding: gzip`.
        public var compressionThreshold: Int
        /// Serve HTTPS with this certificate and key; `nil` serves plain HTTP.
        public var tls: TLS?
        /// Receives libmicrohttpd's diagnostic messages (failed accepts, TLS handshake errors, ...), called on
        /// its threads. `nil` drops them; the server itself never prints.
        public var log: (@Sendable (String) -> Void)?
        /// Which requests' handlers run on threads of the server's own (``HandlerThreads``, their
        /// connections suspended meanwhile) rather than on the polling thread that received them: at
        /// least those that may wait for another request, which that thread might be the one to read.
        /// A handler run on a polling thread holds up the thread's other connections while it runs;
        /// one run apart costs a thread hop and a suspend and resume (with 16 clients, the sync server's
        /// pulls took about a tenth more CPU and its pushes a seventh longer). Every request by default;
        /// `ostore-server` sends only pushes that name the batch they follow
        /// (``SyncService/mayWaitForAnotherRequest(_:)``).
        public var runsOffPollingThread: @Sendable (HTTPRequest) -> Bool = { _ in true }

        public init(
            address: String = "127.0.0.1", port: UInt16 = 0, threads: Int = 4, connectionLimit: Int = 1024,
            perIPConnectionLimit: Int = 0, connectionMemoryLimit: Int = 64 * 1024, timeoutSeconds: Int = 30,
            maxBodyBytes: Int = 8 * 1024 * 1024, compressionThreshold: Int = 1024, tls: TLS? = nil,
            log: (@Sendable (String) -> Void)? = nil
        ) {
            self.address = address
            self.port = port
            self.threads = threads
            self.connectionLimit = connectionLimit
            self.perIPConnectionLimit = perIPConnectionLimit
            self.connectionMemoryLimit = connectionMemoryLimit
            self.timeoutSeconds = timeoutSeconds
            self.maxBodyBytes = maxBodyBytes
            self.compressionThreshold = compressionThreshold
            self.tls = tls
            self.log = log
        }

        /// The PEM files of an HTTPS server: read once at start and handed to GnuTLS through
        /// `MHD_OPTION_HTTPS_MEM_CERT` and `MHD_OPTION_HTTPS_MEM_KEY`.
        public struct TLS: Sendable, Equatable {
            /// The certificate, or the chain with the server's certificate first, in PEM.
            public var certificatePath: String
            /// The private key in PEM, unencrypted.
            public var privateKeyPath: String

            public init(certificatePath: String, privateKeyPath: String) {
                self.certificatePath = certificatePath
                self.privateKeyPath = privateKeyPath
            }
        }
    }
}
