import Foundation
import SyncProtocol

/// What a handler answers: a status, header fields and a body.
///
/// The server adds `Content-Length` (and `Date`) itself, and compresses the body with gzip when the
/// client accepts it and the body is larger than `HTTPServer.Configuration.compressionThreshold`
/// (unless the response already sets `Content-Encoding`). `Content-Length` and `Transfer-Encoding`
/// given here are ignored.
///
/// ```swift
/// HTTPResponse(status: .ok, headers: ["Content-Type": "text/plain"], body: Data("hello".utf8))
/// HTTPResponse.json(status: .created, Data(#"{"id":1}"#.utf8))
/// HTTPResponse.error(.notFound, "There is no dataset 'x'.")
/// ```
///
/// The body is copied into libmicrohttpd's response (`MHD_create_response_from_buffer` with
/// `.RESPMEM_MUST_COPY`); see the manual, "microhttpd-responses"
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dresponses).
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: Data

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body is `text` in UTF-8, `Content-Type: text/plain; charset=utf-8`.
    public static func text(status: HTTPStatus = .ok, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Data(text.utf8))
    }

    /// A response whose body is JSON the caller already encoded, `Content-Type: application/json`.
    public static func json(status: HTTPStatus = .ok, _ body: Data) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: body)
    }
}
