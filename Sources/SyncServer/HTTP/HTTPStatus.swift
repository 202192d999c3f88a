/// An HTTP status code.
///
/// libmicrohttpd writes the status line and its reason phrase; a status is just the number.
///
/// ```swift
/// let response = HTTPResponse(status: .notFound)
/// let teapot: HTTPStatus = 418
/// ```
///
/// See the libmicrohttpd manual, "microhttpd-responses"
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dresponses).
public struct HTTPStatus: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The three-digit code, 100...999.
    public let rawValue: Int

    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    public init(integerLiteral value: Int) {
        self.rawValue = value
    }

    public var description: String { String(rawValue) }

    public static let ok: HTTPStatus = 200
    public static let created: HTTPStatus = 201
    public static let accepted: HTTPStatus = 202
    public static let noContent: HTTPStatus = 204
    public static let notModified: HTTPStatus = 304
    public static let badRequest: HTTPStatus = 400
    public static let unauthorized: HTTPStatus = 401
    public static let forbidden: HTTPStatus = 403
    public static let notFound: HTTPStatus = 404
    public static let methodNotAllowed: HTTPStatus = 405
    public static let conflict: HTTPStatus = 409
    public static let gone: HTTPStatus = 410
    public static let preconditionFailed: HTTPStatus = 412
    /// Content Too Large (RFC 9110 §15.5.14); the server answers it for bodies over `maxBodyBytes`.
    public static let contentTooLarge: HTTPStatus = 413
    public static let unsupportedMediaType: HTTPStatus = 415
    public static let unprocessableContent: HTTPStatus = 422
    public static let upgradeRequired: HTTPStatus = 426
    public static let tooManyRequests: HTTPStatus = 429
    public static let internalServerError: HTTPStatus = 500
    public static let notImplemented: HTTPStatus = 501
    public static let serviceUnavailable: HTTPStatus = 503
}
