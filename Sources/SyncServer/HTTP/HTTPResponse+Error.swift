import Foundation
import SyncProtocol

extension HTTPResponse {
    /// The JSON error response every refusal uses, from the HTTP layer or a handler:
    /// `{"error":{"code":"body_too_large","message":"..."}}` with `Content-Type: application/json`,
    /// the status that goes with the code, and `Retry-After` for codes clients retry.
    ///
    /// `code` is stable and meant for programs; `message` is for people and says what to do.
    ///
    /// ```swift
    /// HTTPResponse.error(ErrorBody(.invalidCursor, "The cursor is not one this server issued."))
    /// ```
    public static func error(_ body: ErrorBody) -> HTTPResponse {
        // Strings and optional integers cannot fail to encode.
        let encoded =
            (try? ProtocolJSON.encode(body)) ?? Data(#"{"error":{"code":"internal_error","message":""}}"#.utf8)
        var response = HTTPResponse.json(status: HTTPStatus(rawValue: body.status), encoded)
        switch body.error.code {
        case .unavailable: response.headers["Retry-After"] = "1"
        // A pull may wait again once one of those waiting has been answered; meanwhile it polls.
        case .tooManyWaitingPulls: response.headers["Retry-After"] = "30"
        default: break
        }
        return response
    }

    /// ``error(_:)`` for a code and a message.
    public static func error(_ code: ErrorCode, _ message: String) -> HTTPResponse {
        error(ErrorBody(code, message))
    }
}
