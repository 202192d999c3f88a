import CCurl
import Foundation
import SyncProtocol

/// An HTTP/1.1 client over libcurl that keeps its connections alive across requests.
///
/// It owns libcurl easy handles and reuses them, so consecutive requests to one server share a TCP
/// (and TLS) connection, libcurl's DNS cache and its TLS session cache. Any thread may call
/// `send(_:)`: up to `Configuration.maxConcurrentRequests` requests (2 by default) run at once,
/// each on its own handle and connection, and more wait for a free one. A request takes the handle
/// freed last, so a client used by one thread at a time keeps to one connection.
///
/// ```swift
/// let client = try HTTPClient()
/// let request = HTTPClientRequest(
///     method: .post, url: URL(string: "https://sync.example.com/v1/datasets/family/hello")!,
///     headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
///     body: try ProtocolJSON.encode(hello))
/// let response = try client.send(request)  // throws TransportError when no response came back
/// let answer = try JSONDecoder().decode(HelloResponse.self, from: response.body)
/// ```
///
/// Timeouts, compression, TLS verification and proxies are set by `Configuration`. Built on
/// libcurl's easy interface: https://curl.se/libcurl/c/libcurl-easy.html.
///
/// `@unchecked Sendable`: the mutable state is the pool of libcurl handles, which libcurl forbids
/// using from two threads at once. `idle` and `handleCount` are read and written only while `pool`
/// is locked; a handle taken from `idle` belongs to the one `send(_:)` that took it until it puts it
/// back, so every use of it (reset, options, perform, info) is on one thread, the transfer's
/// callbacks run synchronously inside `curl_easy_perform` on that thread, and a handle never leaves
/// this object. `configuration` is an immutable `Sendable` value.
public final class HTTPClient: @unchecked Sendable {
    public let configuration: Configuration
    /// Guards `idle` and `handleCount`; signalled when a handle is put back.
    private let pool = NSCondition()
    /// Handles no request is using, the one freed last at the end.
    private var idle: [CurlEasy]
    /// Handles made, idle or in use: at most `configuration.maxConcurrentRequests`.
    private var handleCount = 1

    /// Makes the first libcurl handle (and runs `curl_global_init` once per process); the others are
    /// made when requests run at once. No connection is opened until the first request.
    ///
    /// Throws a `TransportError` of kind `.clientFailure` when libcurl cannot be set up.
    public init(configuration: Configuration = Configuration()) throws(TransportError) {
        self.configuration = configuration
        idle = [try Self.makeHandle(method: "-", url: "-")]
    }

    private static func makeHandle(method: String, url: String) throws(TransportError) -> CurlEasy {
        do {
            return try CurlEasy()
        } catch {
            throw TransportError(
                kind: .clientFailure, curlCode: Int(error.code.rawValue), message: error.message, method: method,
                url: url)
        }
    }

    /// The handle freed last, a new one while fewer than `maxConcurrentRequests` exist, or, when
    /// that many are in use, the first one put back.
    private func takeHandle(method: String, url: URL) throws(TransportError) -> CurlEasy {
        pool.lock()
        defer { pool.unlock() }
        while idle.isEmpty {
            guard handleCount >= max(1, configuration.maxConcurrentRequests) else {
                handleCount += 1
                do {
                    return try Self.makeHandle(method: method, url: TransportError.redacted(url))
                } catch {
                    handleCount -= 1
                    throw error
                }
            }
            pool.wait()
        }
        return idle.removeLast()
    }

    private func putBack(_ easy: CurlEasy) {
        pool.withLock { idle.append(easy) }
        pool.signal()
    }

    /// Sends `request` and waits for the whole response, on the calling thread.
    ///
    /// Any HTTP status is returned as a response; a request that got none (no connection, a timeout,
    /// a certificate that does not verify, a broken connection) throws `TransportError`, whose
    /// `isRetryable` says whether to try again later. The request's headers (its token) never appear
    /// in the error.
    ///
    /// ```swift
    /// let response = try client.send(HTTPClientRequest(url: URL(string: "http://127.0.0.1:8080/healthz")!))
    /// ```
    ///
    /// https://curl.se/libcurl/c/curl_easy_perform.html
    public func send(_ request: HTTPClientRequest) throws(TransportError) -> HTTPClientResponse {
        try send(request, cancelledWhen: nil)
    }

    /// ``send(_:)``, given up (``TransportError/Kind/cancelled``) once `isCancelled` returns true:
    /// libcurl asks it about once a second while nothing moves, more often while data flows. For a
    /// request that may wait long for its answer, a live pull.
    ///
    /// ```swift
    /// let stop = Atomic<Bool>(false)
    /// let response = try client.send(request, cancelledWhen: { stop.load(ordering: .relaxed) })
    /// ```
    ///
    /// https://curl.se/libcurl/c/CURLOPT_XFERINFOFUNCTION.html
    public func send(_ request: HTTPClientRequest, cancelledWhen isCancelled: (@Sendable () -> Bool)?)
        throws(TransportError) -> HTTPClientResponse
    {
        let method = request.method.rawValue
        let url = request.url
        guard HTTPHeaders.isToken(method) else {
            throw .refused("the method is not an HTTP token", method: String(method.prefix(32)), url: url)
        }
        var headers = request.headers
        for field in headers.fields {
            guard HTTPHeaders.isToken(field.name) else {
                throw .refused(
                    "a header name is not an HTTP token: \(field.name.prefix(64).debugDescription)", method: method,
                    url: url)
            }
            guard HTTPHeaders.isFieldValue(field.value) else {
                throw .refused(
                    "the value of header \(field.name) holds a control character (a line break, NUL, DEL or another but tab)",
                    method: method, url: url)
            }
        }
        var body = request.body
        if let threshold = configuration.requestCompressionThreshold, body.count > threshold,
            !headers.contains("Content-Encoding")
        {
            guard let compressed = GzipCompressor.compress(body) else {
                throw TransportError(
                    kind: .clientFailure, curlCode: nil, message: "zlib could not compress the body", method: method,
                    url: TransportError.redacted(url))
            }
            body = compressed
            headers["Content-Encoding"] = "gzip"
        }
        let easy = try takeHandle(method: method, url: url)
        defer { putBack(easy) }
        return try perform(on: easy, method: method, url: url, headers: headers, body: body, isCancelled: isCancelled)
    }

    /// One transfer on `easy`, which the calling thread holds.
    private func perform(
        on easy: CurlEasy, method: String, url: URL, headers: HTTPHeaders, body: Data,
        isCancelled: (@Sendable () -> Bool)?
    ) throws(TransportError) -> HTTPClientResponse {
        let collector = TransferCollector(limit: configuration.maxResponseBytes, isCancelled: isCancelled)
        let list = CurlHeaderList()
        // CURLOPT_POSTFIELDS is not copied by libcurl: the whole transfer runs inside withUnsafeBytes.
        let outcome = body.withUnsafeBytes { bytes -> Result<CURLcode, CurlSetupFailure> in
            do throws(CurlSetupFailure) {
                try configure(easy, method: method, url: url, headers: headers, body: bytes, list: list)
                try easy.set(.writeFunction, collectBody)
                try easy.set(.headerFunction, collectHeader)
                let context = Unmanaged.passUnretained(collector).toOpaque()
                try easy.set(.writeData, context)
                try easy.set(.headerData, context)
                if isCancelled != nil {
                    try easy.set(.noProgress, 0)
                    try easy.setProgress(checkCancelled)
                    try easy.set(.progressData, context)
                }
                let code = withExtendedLifetime((collector, list)) { easy.perform() }
                return .success(code)
            } catch {
                return .failure(error)
            }
        }
        let code: CURLcode
        switch outcome {
        case .success(let result):
            code = result
        case .failure(let setup):
            let kind = TransportError.kind(of: setup.code)
            throw TransportError(
                kind: kind == .other ? .clientFailure : kind, curlCode: Int(setup.code.rawValue),
                message: setup.message, method: method, url: TransportError.redacted(url))
        }
        guard code == CURLE_OK else {
            if collector.exceededLimit {
                throw TransportError(
                    kind: .responseTooLarge, curlCode: Int(code.rawValue),
                    message: "the response body is larger than maxResponseBytes (\(configuration.maxResponseBytes))",
                    method: method, url: TransportError.redacted(url))
            }
            throw TransportError(curlCode: code, errorText: easy.errorText, method: method, url: url)
        }
        // libcurl reports success for a connection closed in the middle of the header block (the
        // body is then read "until close", and there is none): a truncated answer, not an empty one.
        guard collector.headersEnded else {
            throw TransportError(
                kind: .connectionLost, curlCode: nil,
                message: "the connection closed before the end of the response's headers", method: method,
                url: TransportError.redacted(url))
        }
        return HTTPClientResponse(
            status: easy.info(.responseCode) ?? 0, headers: collector.headers, body: collector.body,
            newConnections: easy.info(.numberOfConnects) ?? 0)
    }

    /// Every option of one transfer, from libcurl's defaults (`curl_easy_reset`): nothing set for an
    /// earlier request can leak into this one.
    private func configure(
        _ easy: CurlEasy, method: String, url: URL, headers: HTTPHeaders, body: UnsafeRawBufferPointer,
        list: CurlHeaderList
    ) throws(CurlSetupFailure) {
        try easy.reset()
        // No signals: libcurl may then be used from any thread (https://curl.se/libcurl/c/CURLOPT_NOSIGNAL.html).
        try easy.set(.noSignal, 1)
        try easy.set(.protocols, "http,https")
        try easy.set(.url, url.absoluteString)
        try easy.set(.httpVersion, Int(CURL_HTTP_VERSION_1_1))
        try easy.set(.userAgent, configuration.userAgent)
        try easy.set(.connectTimeoutMilliseconds, max(1, configuration.connectTimeout.curlMilliseconds))
        if let total = configuration.totalTimeout {
            try easy.set(.timeoutMilliseconds, max(1, total.curlMilliseconds))
        }
        if configuration.lowSpeedLimit > 0 {
            try easy.set(.lowSpeedLimit, configuration.lowSpeedLimit)
            try easy.set(.lowSpeedTime, configuration.lowSpeedTime.curlSecondsAtLeastOne)
        }
        if configuration.responseCompression.asks(for: url) {
            // "": every coding this libcurl can decode, announced in Accept-Encoding and decoded.
            try easy.set(.acceptEncoding, "")
        }
        try easy.set(.verifyPeer, configuration.verifiesCertificates ? 1 : 0)
        try easy.set(.verifyHost, configuration.verifiesCertificates ? 2 : 0)
        if let caFile = configuration.caFile {
            try easy.set(.caInfo, caFile)
        }
        try setMethod(method, body: body, on: easy)
        try setHeaders(headers, hasBody: !body.isEmpty || method == "POST", list: list, on: easy)
    }

    private func setMethod(_ method: String, body: UnsafeRawBufferPointer, on easy: CurlEasy)
        throws(CurlSetupFailure)
    {
        if method == "GET" && body.isEmpty {
            try easy.set(.httpGet, 1)
            return
        }
        if method == "HEAD" && body.isEmpty {
            try easy.set(.noBody, 1)
            return
        }
        if method != "POST" || body.isEmpty {
            try easy.set(.customRequest, method)
        }
        guard !body.isEmpty || method == "POST" else { return }
        try easy.set(.post, 1)
        try easy.set(.postFieldSize, Int64(body.count))
        if let base = body.baseAddress, !body.isEmpty {
            // Not copied: the caller keeps `body` valid until perform returns.
            try easy.set(.postFields, UnsafeMutableRawPointer(mutating: base))
        } else {
            // A zero-byte body still needs post fields, or libcurl would read one from stdin.
            try easy.set(.copyPostFields, "")
        }
    }

    private func setHeaders(_ headers: HTTPHeaders, hasBody: Bool, list: CurlHeaderList, on easy: CurlEasy)
        throws(CurlSetupFailure)
    {
        var lines: [String] = []
        for field in headers.fields {
            // "Name;" is libcurl's spelling of a header with an empty value.
            lines.append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        // "Name:" removes a header libcurl would add: no 100-continue round trip, and no form type
        // claimed for a body the caller did not type.
        var removals = ["Expect"]
        if hasBody { removals.append("Content-Type") }
        for name in removals where !headers.contains(name) {
            lines.append("\(name):")
        }
        for line in lines {
            guard list.append(line) else {
                throw CurlSetupFailure(code: CURLE_OUT_OF_MEMORY, what: "curl_slist_append")
            }
        }
        try easy.setHeaders(list)
    }
}

extension TransportError {
    /// A request refused before libcurl sees it.
    static func refused(_ message: String, method: String, url: URL) -> TransportError {
        TransportError(kind: .invalidRequest, curlCode: nil, message: message, method: method, url: redacted(url))
    }
}

/// What one transfer's callbacks collect: the final response's header fields and its body, bounded.
/// Used only by the thread running `curl_easy_perform`.
private final class TransferCollector {
    let limit: Int
    var body = Data()
    var headers = HTTPHeaders()
    var exceededLimit = false
    /// Whether the blank line ending the last header block arrived.
    var headersEnded = false
    let isCancelled: (@Sendable () -> Bool)?

    init(limit: Int, isCancelled: (@Sendable () -> Bool)?) {
        self.limit = limit
        self.isCancelled = isCancelled
    }
}

/// `CURLOPT_XFERINFOFUNCTION`: aborts the transfer once its caller gave it up.
/// https://curl.se/libcurl/c/CURLOPT_XFERINFOFUNCTION.html
private func checkCancelled(
    _ context: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
    _ uploadTotal: curl_off_t, _ uploaded: curl_off_t
) -> Int32 {
    guard let context else { return 0 }
    let collector = Unmanaged<TransferCollector>.fromOpaque(context).takeUnretainedValue()
    return collector.isCancelled?() == true ? 1 : 0
}

/// `CURLOPT_WRITEFUNCTION`: appends body bytes; returning less than given makes libcurl stop the
/// transfer with `CURLE_WRITE_ERROR`. https://curl.se/libcurl/c/CURLOPT_WRITEFUNCTION.html
private func collectBody(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    guard let context else { return 0 }
    let collector = Unmanaged<TransferCollector>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard length > 0, let data else { return length }
    guard collector.body.count + length <= collector.limit else {
        collector.exceededLimit = true
        return 0
    }
    collector.body.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
    return length
}

/// `CURLOPT_HEADERFUNCTION`: one call per header line, status lines included. A status line starts
/// a new header block (after `100 Continue`), so only the final response's fields are kept.
/// https://curl.se/libcurl/c/CURLOPT_HEADERFUNCTION.html
private func collectHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?
) -> Int {
    let length = size * count
    guard let context, let data, length > 0 else { return length }
    let collector = Unmanaged<TransferCollector>.fromOpaque(context).takeUnretainedValue()
    let bytes = UnsafeRawBufferPointer(start: data, count: length)
    let line = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
    if line.hasPrefix("HTTP/") {
        collector.headers = HTTPHeaders()
        collector.headersEnded = false
    } else if line.isEmpty {
        collector.headersEnded = true
    } else if line.hasPrefix(" ") || line.hasPrefix("\t") {
        // An obsolete folded continuation of the previous field (RFC 9112, section 5.2).
        var fields = collector.headers.fields
        if let last = fields.popLast() {
            fields.append(.init(name: last.name, value: last.value + " " + line.trimmingCharacters(in: .whitespaces)))
            collector.headers = HTTPHeaders(fields)
        }
    } else if let colon = line.firstIndex(of: ":") {
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        collector.headers.add(name: String(line[..<colon]), value: value)
    }
    return length
}
