import Foundation
import SyncProtocol

/// What `HTTPClient.send(_:)` received: the final response's status, header fields and body.
///
/// ```swift
/// let response = try client.send(request)
/// switch response.status {
/// case 200: return try JSONDecoder().decode(PushResponse.self, from: response.body)
/// case 429, 503: sleep(for: response.retryAfter() ?? .seconds(1))
/// default: throw …
/// }
/// ```
///
/// Any status is a response, 4xx and 5xx included; only a failure to get one is a
/// `TransportError`. The body is decoded when the server compressed it (libcurl does it, see
/// https://curl.se/libcurl/c/CURLOPT_ACCEPT_ENCODING.html), while `headers` still show the
/// `Content-Encoding` the server sent.
public struct HTTPClientResponse: Sendable, Hashable {
    /// The status code, `200`.
    public var status: Int
    public var headers: HTTPHeaders
    public var body: Data
    /// How many connections libcurl opened for this request (`CURLINFO_NUM_CONNECTS`): 0 when it
    /// reused one kept alive from an earlier request, 1 for a new one.
    /// https://curl.se/libcurl/c/CURLINFO_NUM_CONNECTS.html
    public var newConnections: Int

    public init(status: Int, headers: HTTPHeaders = [:], body: Data = Data(), newConnections: Int = 0) {
        self.status = status
        self.headers = headers
        self.body = body
        self.newConnections = newConnections
    }

    /// How long the server asks the client to wait before retrying, from `Retry-After`: either
    /// delay-seconds (`Retry-After: 120`) or an HTTP-date (`Retry-After: Fri, 31 Dec 1999 23:59:59 GMT`,
    /// counted from `now`, zero when past). nil when the header is absent or malformed.
    ///
    /// ```swift
    /// if response.status == 503, let wait = response.retryAfter() { try await Task.sleep(for: wait) }
    /// ```
    ///
    /// RFC 9110, section 10.2.3.
    public func retryAfter(now: Date = Date()) -> Duration? {
        headers["Retry-After"].flatMap { Self.retryAfterDelay($0, now: now) }
    }

    /// Parses a `Retry-After` value: `delay-seconds` (one or more ASCII digits) or an HTTP-date in
    /// any of the three forms RFC 9110 (section 5.6.7) says recipients accept, counted from `now`.
    /// A date in the past gives zero; anything else, nil.
    ///
    /// ```swift
    /// HTTPClientResponse.retryAfterDelay("30", now: Date())  // .seconds(30)
    /// ```
    public static func retryAfterDelay(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) {
            return Int64(text).map { Duration.seconds($0) }
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds > 0 else { return .zero }
        return .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }
}
