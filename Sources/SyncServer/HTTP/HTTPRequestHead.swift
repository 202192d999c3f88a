import Foundation
import SyncProtocol

/// A request as its headers describe it, before any of its body is read: what
/// ``HTTPServer/Configuration/admit`` decides on, so a request it refuses costs the server its
/// headers and nothing more.
///
/// ```swift
/// configuration.admit = { head in
///     head.headers["Authorization"] == "Bearer \(secret)" ? .admit() : .refuse(.error(.unauthorized, "send the token"))
/// }
/// ```
public struct HTTPRequestHead: Sendable {
    /// The method as sent: `GET`, `POST`, ...
    public var method: String
    /// The path as sent, without the query string and not percent-decoded: `/v1/a%2Fb` is a path of
    /// two segments, `v1` and `a%2Fb`.
    public var path: String
    /// The query's items in order, percent-decoded (`+` is a space); a bare `?flag` has a `nil` value.
    public var queryItems: [URLQueryItem]
    /// The request's header fields; lookups ignore case.
    public var headers: HTTPHeaders
    /// The client's IP address (`127.0.0.1`, `::1`), or an empty string when unknown.
    public var remoteAddress: String

    public init(
        method: String, path: String, queryItems: [URLQueryItem] = [], headers: HTTPHeaders = HTTPHeaders(),
        remoteAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.queryItems = queryItems
        self.headers = headers
        self.remoteAddress = remoteAddress
    }
}

/// What ``HTTPServer/Configuration/admit`` decides from a request's head.
public enum HTTPAdmission: Sendable {
    /// Read the body and hand the request to the handler; `note` reaches it as
    /// ``HTTPRequest/admissionNote`` (what the decision found out, such as the token's grant, so the
    /// handler does not look it up again). The bodies of requests of one `budgetShare` (a token's
    /// id) hold at most ``HTTPServer/Configuration/bodyMemoryPerShare`` together.
    case admit(note: (any Sendable)? = nil, budgetShare: String? = nil)
    /// Answer with this response at once: the body is not read, and the connection is closed after
    /// the answer when a body was announced.
    case refuse(HTTPResponse)
}
