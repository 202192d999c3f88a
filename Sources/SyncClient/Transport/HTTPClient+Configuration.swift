import Foundation
import SyncProtocol

extension HTTPClient {
    /// How an `HTTPClient` connects, waits, compresses and verifies.
    ///
    /// The defaults suit a sync client on a flaky network: a 10 s connect timeout, no total timeout
    /// but an abort when less than 1 byte/s flows for 30 s, compressed responses asked for (unless
    /// the server is on this machine, see ``ResponseCompression``), TLS certificates verified
    /// against the system's CAs, proxies taken from the environment.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.caFile = "/etc/ostore/ca.pem"  // trust a private CA
    /// configuration.requestCompressionThreshold = 16 * 1024  // gzip request bodies above 16 KiB
    /// let client = try HTTPClient(configuration: configuration)
    /// ```
    ///
    /// **Proxies.** The client never sets `CURLOPT_PROXY`, so libcurl reads the environment on each
    /// request: `http_proxy` for http URLs (lowercase only: libcurl ignores `HTTP_PROXY`, see
    /// "httpoxy"), `https_proxy` or `HTTPS_PROXY` for https URLs, `all_proxy`/`ALL_PROXY` for both,
    /// and `no_proxy`/`NO_PROXY` for hosts to reach directly (a server on 127.0.0.1 behind a
    /// proxy-setting environment needs `no_proxy=127.0.0.1,localhost`). See
    /// https://curl.se/libcurl/c/CURLOPT_PROXY.html and https://curl.se/libcurl/c/CURLOPT_NOPROXY.html.
    public struct Configuration: Sendable, Hashable {
        /// How long to wait for the TCP connection and the TLS handshake.
        /// https://curl.se/libcurl/c/CURLOPT_CONNECTTIMEOUT_MS.html
        public var connectTimeout: Duration
        /// A transfer slower than this many bytes per second for `lowSpeedTime` is aborted with a
        /// retryable `.timedOut`; this is what ends a request to a server that hangs, without cutting
        /// off a large but moving transfer. 0 turns the check off.
        /// https://curl.se/libcurl/c/CURLOPT_LOW_SPEED_LIMIT.html
        public var lowSpeedLimit: Int
        /// See `lowSpeedLimit`; libcurl counts it in whole seconds (rounded up, at least 1).
        /// https://curl.se/libcurl/c/CURLOPT_LOW_SPEED_TIME.html
        public var lowSpeedTime: Duration
        /// The most a whole request may take, connecting included; nil for no limit.
        /// https://curl.se/libcurl/c/CURLOPT_TIMEOUT_MS.html
        public var totalTimeout: Duration?
        /// When to ask for compressed responses (`Accept-Encoding` with every coding this libcurl
        /// decodes, gzip among them) and decode them: by default unless the server is on this
        /// machine. https://curl.se/libcurl/c/CURLOPT_ACCEPT_ENCODING.html
        public var responseCompression: ResponseCompression
        /// Request bodies larger than this many bytes are gzipped (zlib) and sent with
        /// `Content-Encoding: gzip`, unless the request sets its own `Content-Encoding`. nil (the
        /// default) never compresses: every OfflineStore server accepts gzip, other servers may not.
        public var requestCompressionThreshold: Int?
        /// Verify the server's certificate chain and that it names the host
        /// (`CURLOPT_SSL_VERIFYPEER`, `CURLOPT_SSL_VERIFYHOST`). Turning it off lets anyone on the
        /// path read and change the traffic, tokens included; it exists for debugging only.
        /// https://curl.se/libcurl/c/CURLOPT_SSL_VERIFYPEER.html
        public var verifiesCertificates: Bool
        /// A PEM file of the CA certificates to trust instead of the system's (a private CA, or a
        /// self-signed server certificate). https://curl.se/libcurl/c/CURLOPT_CAINFO.html
        public var caFile: String?
        /// Sent as `User-Agent`. https://curl.se/libcurl/c/CURLOPT_USERAGENT.html
        public var userAgent: String
        /// A response body larger than this (after decoding) ends the request with
        /// `.responseTooLarge`, so a broken or hostile server cannot exhaust memory.
        public var maxResponseBytes: Int
        /// Most requests running at once, each on its own libcurl handle and connection; a request
        /// over it waits for one to end. The sync engine runs two at once when it pushes to a
        /// server that keeps pushes in order (the next batch goes out before the last is
        /// answered); with 1 it still syncs, one batch at a time. At least 1.
        public var maxConcurrentRequests: Int

        public init(
            connectTimeout: Duration = .seconds(10), lowSpeedLimit: Int = 1, lowSpeedTime: Duration = .seconds(30),
            totalTimeout: Duration? = nil, responseCompression: ResponseCompression = .unlessLoopback,
            requestCompressionThreshold: Int? = nil, verifiesCertificates: Bool = true, caFile: String? = nil,
            userAgent: String = HTTPClient.defaultUserAgent, maxResponseBytes: Int = 256 << 20,
            maxConcurrentRequests: Int = 2
        ) {
            self.connectTimeout = connectTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.lowSpeedTime = lowSpeedTime
            self.totalTimeout = totalTimeout
            self.responseCompression = responseCompression
            self.requestCompressionThreshold = requestCompressionThreshold
            self.verifiesCertificates = verifiesCertificates
            self.caFile = caFile
            self.userAgent = userAgent
            self.maxResponseBytes = maxResponseBytes
            self.maxConcurrentRequests = maxConcurrentRequests
        }
    }

    /// The release of OfflineStore this build belongs to, as sent in `User-Agent`.
    public static let version = OfflineStoreRelease.version

    /// `OfflineStore/<version>`.
    public static let defaultUserAgent = "OfflineStore/\(version)"
}

extension Duration {
    /// Whole milliseconds, rounded up, clamped to what a C `long` holds (at least 0).
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return 0 }
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int.max }
        let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int(clamping: product.addingReportingOverflow(fraction).overflow ? Int64.max : product + fraction)
    }

    /// Whole seconds, rounded up, at least 1 (libcurl's low-speed time unit).
    var curlSecondsAtLeastOne: Int {
        let milliseconds = curlMilliseconds
        return max(1, milliseconds / 1000 + (milliseconds % 1000 == 0 ? 0 : 1))
    }
}
