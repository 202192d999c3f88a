import Foundation
import SyncProtocol

/// One complete HTTP request, as the handler sees it: the body fully received (and decompressed when
/// it came with `Content-Encoding: gzip`) and never larger than `HTTPServer.Configuration.maxBodyBytes`.
///
/// ```swift
/// let server = try HTTPServer { request in
///     guard request.method == "POST", request.path == "/echo" else { return HTTPResponse(status: .notFound) }
///     let name = request.queryValue(for: "name") ?? "anonymous"
///     return HTTPResponse(status: .ok, headers: ["X-Name": name], body: request.body)
/// }
/// ```
///
/// The path is as sent, not percent-decoded, so an encoded `/` (`%2F`) never separates segments; the
/// query's items are decoded (`+` is a space).
public struct HTTPRequest: Sendable {
    /// The method as sent: `GET`, `POST`, ...
    public var method: String
    /// The path without the query string, as sent (not percent-decoded): `/v1/sync`.
    public var path: String
    /// The query's items in order; a bare `?flag` has a `nil` value.
    public var queryItems: [URLQueryItem]
    /// The request's header fields; lookups ignore case. `Content-Encoding` and `Content-Length` describe
    /// the body as it was sent, not `body` after decompression.
    public var headers: HTTPHeaders
    /// The body, decompressed. Empty when there was none.
    public var body: Data
    /// The client's IP address (`127.0.0.1`, `::1`), or an empty string when unknown.
    public var remoteAddress: String
    /// What ``HTTPServer/Configuration/admit`` noted when it admitted the request's head; `nil` when it
    /// noted nothing, or for a request made by hand.
    public var admissionNote: (any Sendable)?

    public init(
        method: String, path: String, queryItems: [URLQueryItem] = [], headers: HTTPHeaders = HTTPHeaders(),
        body: Data = Data(), remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.queryItems = queryItems
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The value of the first query item called `name`; `nil` when absent or valueless.
    public func queryValue(for name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }
}

extension HTTPRequest {
    /// A request of `head` without a body: what a refusal decided on the head is answered for.
    init(_ head: HTTPRequestHead) {
        self.init(
            method: head.method, path: head.path, queryItems: head.queryItems, headers: head.headers,
            remoteAddress: head.remoteAddress)
    }
}
