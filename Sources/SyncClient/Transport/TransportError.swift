import CCurl
import Foundation

/// Why an `HTTPClient` request got no HTTP response: libcurl's result code and error text, the
/// request's method and URL, and whether trying again later may work.
///
/// An HTTP error status (404, 503…) is not a `TransportError`: it is a response. The URL is kept as
/// scheme, host, port and path only (no user name, password, query or fragment), and no header is
/// ever kept, so the description never shows an `Authorization` token.
///
/// ```swift
/// do {
///     let response = try client.send(request)
/// } catch where error.isRetryable {
///     print("offline? will retry: \(error)")
///     // POST http://127.0.0.1:8080/v1/datasets/family/push: could not connect (curl 7:
///     // Failed to connect to 127.0.0.1 port 8080 after 0 ms: Couldn't connect to server)
/// } catch {
///     print("giving up: \(error)")  // a TLS certificate that does not verify, a bad URL…
/// }
/// ```
///
/// libcurl's codes: https://curl.se/libcurl/c/libcurl-errors.html; the error text comes from
/// https://curl.se/libcurl/c/CURLOPT_ERRORBUFFER.html.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, grouped by what a caller does about it.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The host name did not resolve (or the proxy's): `CURLE_COULDNT_RESOLVE_HOST`,
        /// `CURLE_COULDNT_RESOLVE_PROXY`. Retryable: often the network is down.
        case couldNotResolveHost
        /// Nothing accepted the connection (refused, unreachable): `CURLE_COULDNT_CONNECT`. Retryable.
        case couldNotConnect
        /// The connect timeout, the total timeout, or the low-speed limit was hit:
        /// `CURLE_OPERATION_TIMEDOUT`. Retryable.
        case timedOut
        /// The connection broke during the exchange: `CURLE_SEND_ERROR`, `CURLE_RECV_ERROR`,
        /// `CURLE_PARTIAL_FILE`, `CURLE_GOT_NOTHING`, `CURLE_HTTP2`, `CURLE_HTTP2_STREAM`, `CURLE_AGAIN`.
        /// Retryable (the protocol's requests are safe to repeat).
        case connectionLost
        /// The TLS handshake failed without a verdict on the certificate (a reset, no common
        /// protocol version): `CURLE_SSL_CONNECT_ERROR`. Retryable; a server that is not HTTPS at all
        /// also ends here, so a caller's backoff keeps such a misconfiguration from spinning.
        case tlsHandshakeFailed
        /// The server's certificate did not verify against the trusted CAs, or does not name the
        /// host: `CURLE_PEER_FAILED_VERIFICATION`, `CURLE_SSL_INVALIDCERTSTATUS`,
        /// `CURLE_SSL_PINNEDPUBKEYNOTMATCH`, `CURLE_SSL_ISSUER_ERROR`. Not retryable: trust the right
        /// CA (`Configuration.caFile`) or fix the server's certificate.
        case tlsVerificationFailed
        /// The client's own TLS setup is unusable (the CA file cannot be read, no cipher):
        /// `CURLE_SSL_CACERT_BADFILE`, `CURLE_SSL_CERTPROBLEM`, `CURLE_SSL_CIPHER`, `CURLE_SSL_ENGINE_*`,
        /// `CURLE_SSL_CRL_BADFILE`. Not retryable.
        case tlsConfigurationInvalid
        /// The request cannot be sent as given: a malformed URL, a scheme other than http or https,
        /// a header name or value that is not allowed: `CURLE_URL_MALFORMAT`,
        /// `CURLE_UNSUPPORTED_PROTOCOL`, or caught before libcurl. Not retryable.
        case invalidRequest
        /// The response body grew past `Configuration.maxResponseBytes`. Not retryable.
        case responseTooLarge
        /// The server's answer was not HTTP or its body could not be decoded:
        /// `CURLE_WEIRD_SERVER_REPLY`, `CURLE_BAD_CONTENT_ENCODING`. Not retryable.
        case invalidResponse
        /// libcurl could not be set up (out of memory, an option this libcurl lacks), or the request
        /// body could not be compressed. Not retryable.
        case clientFailure
        /// The caller gave up on the answer (``HTTPClient/send(_:cancelledWhen:)``):
        /// `CURLE_ABORTED_BY_CALLBACK`. Not retryable.
        case cancelled
        /// Any other libcurl failure. Not retryable.
        case other
    }

    /// What went wrong.
    public let kind: Kind
    /// libcurl's `CURLcode`, or nil when the failure was found before libcurl ran.
    public let curlCode: Int?
    /// libcurl's own account of the failure (its error buffer, else `curl_easy_strerror`), or ours
    /// when libcurl was not involved.
    public let message: String
    /// The request's method (`POST`).
    public let method: String
    /// The request's URL as scheme, host, port and path: never credentials, a query or a fragment.
    public let url: String

    /// Whether the same request may succeed later, unchanged: a failure of the network or the
    /// server's reachability (resolve, connect, timeouts, a broken connection, a failed handshake),
    /// not of the request, the certificate or the configuration.
    public var isRetryable: Bool {
        switch kind {
        case .couldNotResolveHost, .couldNotConnect, .timedOut, .connectionLost, .tlsHandshakeFailed: true
        case .tlsVerificationFailed, .tlsConfigurationInvalid, .invalidRequest, .responseTooLarge, .invalidResponse,
            .cancelled,
            .clientFailure, .other:
            false
        }
    }

    public init(kind: Kind, curlCode: Int?, message: String, method: String, url: String) {
        self.kind = kind
        self.curlCode = curlCode
        self.message = message
        self.method = method
        self.url = url
    }

    public var description: String {
        let cause = curlCode.map { "curl \($0): \(message)" } ?? message
        return "\(method) \(url): \(kind.summary) (\(cause))\(isRetryable ? "; retryable" : "")"
    }

    /// The error for a libcurl result code, with its error text and the request's (redacted) URL.
    init(curlCode code: CURLcode, errorText: String, method: String, url: URL) {
        var text = errorText.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { text = String(cString: curl_easy_strerror(code)) }
        self.init(
            kind: Self.kind(of: code), curlCode: Int(code.rawValue), message: text, method: method,
            url: Self.redacted(url))
    }

    static func kind(of code: CURLcode) -> Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .couldNotResolveHost
        case CURLE_COULDNT_CONNECT: .couldNotConnect
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM,
            CURLE_AGAIN:
            .connectionLost
        case CURLE_SSL_CONNECT_ERROR: .tlsHandshakeFailed
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_ISSUER_ERROR:
            .tlsVerificationFailed
        case CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CRL_BADFILE:
            .tlsConfigurationInvalid
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL: .invalidRequest
        case CURLE_FILESIZE_EXCEEDED: .responseTooLarge
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING: .invalidResponse
        case CURLE_ABORTED_BY_CALLBACK: .cancelled
        case CURLE_OUT_OF_MEMORY, CURLE_FAILED_INIT, CURLE_UNKNOWN_OPTION, CURLE_NOT_BUILT_IN,
            CURLE_BAD_FUNCTION_ARGUMENT:
            .clientFailure
        default: .other
        }
    }

    /// `scheme://host:port/path`: what is safe to show in logs. User name, password, query and
    /// fragment are dropped (a query may carry a secret); an unparsable URL shows as its scheme only.
    static func redacted(_ url: URL) -> String {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let scheme = components.scheme?.lowercased()
        else { return "(a URL that cannot be parsed)" }
        guard var host = components.percentEncodedHost, !host.isEmpty else { return "\(scheme)://(no host)" }
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        let port = components.port.map { ":\($0)" } ?? ""
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return "\(scheme)://\(host)\(port)\(path)"
    }
}

extension TransportError.Kind {
    /// A few words for the description.
    var summary: String {
        switch self {
        case .couldNotResolveHost: "could not resolve the host"
        case .couldNotConnect: "could not connect"
        case .timedOut: "timed out"
        case .connectionLost: "the connection was lost"
        case .tlsHandshakeFailed: "the TLS handshake failed"
        case .tlsVerificationFailed: "the server's TLS certificate did not verify"
        case .tlsConfigurationInvalid: "the client's TLS configuration is unusable"
        case .invalidRequest: "the request cannot be sent"
        case .responseTooLarge: "the response is too large"
        case .invalidResponse: "the response is not valid HTTP"
        case .clientFailure: "the HTTP client failed"
        case .cancelled: "the request was given up"
        case .other: "the transfer failed"
        }
    }
}
