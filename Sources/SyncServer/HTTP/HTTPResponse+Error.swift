import Foundation

extension HTTPResponse {
    /// The JSON error response every refusal uses:
    /// `{"error":{"code":"body_too_large","message":"..."}}` with `Content-Type: application/json`.
    ///
    /// `code` is stable and meant for programs; `message` is for people and says what to do.
    ///
    /// ```swift
    /// HTTPResponse.error(.badRequest, code: "bad_cursor", message: "The cursor is not one this server issued.")
    /// ```
    public static func error(_ status: HTTPStatus, code: String, message: String) -> HTTPResponse {
        .json(status: status, errorBody(code: code, message: message))
    }

    static func errorBody(code: String, message: String) -> Data {
        let body = ErrorBody(error: .init(code: code, message: message))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Two strings cannot fail to encode.
        return (try? encoder.encode(body)) ?? Data(#"{"error":{"code":"internal","message":""}}"#.utf8)
    }
}

private struct ErrorBody: Encodable {
    struct Detail: Encodable {
        var code: String
        var message: String
    }
    var error: Detail
}
