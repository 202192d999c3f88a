import Foundation
import SyncProtocol

/// One HTTP request for `HTTPClient.send(_:)`: a method, a URL, header fields and a body.
///
/// ```swift
/// var request = HTTPClientRequest(
///     method: .post, url: URL(string: "https://sync.example.com/v1/datasets/family/push")!,
///     headers: ["Content-Type": "application/json"], body: try ProtocolJSON.encode(push))
/// request.headers["Authorization"] = "Bearer \(token)"
/// ```
///
/// The client adds `User-Agent`, `Accept-Encoding` (when `Configuration.responseCompression` asks),
/// `Content-Length`, and `Content-Encoding: gzip` when it compresses the body; it removes libcurl's
/// default `Expect: 100-continue` and, for a body without a `Content-Type`, libcurl's default form
/// type. A header given here wins over libcurl's (https://curl.se/libcurl/c/CURLOPT_HTTPHEADER.html).
public struct HTTPClientRequest: Sendable, Hashable {
    /// An HTTP method: `GET`, `POST`, or any other token.
    public struct Method: RawRepresentable, Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public init(stringLiteral value: String) {
            rawValue = value
        }

        public var description: String { rawValue }

        public static let get: Method = "GET"
        public static let head: Method = "HEAD"
        public static let post: Method = "POST"
        public static let put: Method = "PUT"
        public static let patch: Method = "PATCH"
        public static let delete: Method = "DELETE"
    }

    public var method: Method
    /// An `http` or `https` URL; libcurl refuses every other scheme here.
    public var url: URL
    public var headers: HTTPHeaders
    /// Sent as is (or gzipped, see `HTTPClient.Configuration.requestCompressionThreshold`); empty
    /// for none.
    public var body: Data

    public init(method: Method = .get, url: URL, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}
