/// Every error answer's body: `{"error":{"code":"…","message":"…"}}` plus, where it applies, the
/// index of the offending change or the required major version. `code` is stable; `message` is
/// for people and may change.
///
/// ```swift
/// let body = ErrorBody(.invalidChange, "change 3: …", changeIndex: 3)
/// ```
public struct ErrorBody: Codable, Sendable, Hashable, Error {
    public struct Detail: Codable, Sendable, Hashable {
        public var code: ErrorCode
        public var message: String
        public var changeIndex: Int?
        public var requiredMajorVersion: Int?
    }

    public var error: Detail

    public init(_ code: ErrorCode, _ message: String, changeIndex: Int? = nil, requiredMajorVersion: Int? = nil) {
        error = Detail(code: code, message: message, changeIndex: changeIndex, requiredMajorVersion: requiredMajorVersion)
    }

    public var status: Int { error.code.status }
}

/// The stable error codes and the HTTP status each comes with.
public enum ErrorCode: String, Codable, Sendable, Hashable, CaseIterable {
    /// The body is not JSON, is truncated, repeats a key in one object, or nests too deeply.
    case malformedJSON = "malformed_json"
    /// JSON, but not the message: a field missing or of the wrong type, a malformed site id,
    /// schema version or cursor.
    case invalidMessage = "invalid_message"
    /// One change breaks a rule (identifier, value, operation, site, sequence); `changeIndex` says which.
    case invalidChange = "invalid_change"
    /// A change's clock is further ahead of the server's than the drift limit.
    case clockOutOfRange = "clock_out_of_range"
    /// A push with more changes than ``Limits/maxChangesPerPush``.
    case tooManyChanges = "too_many_changes"
    case invalidCursor = "invalid_cursor"
    case bodyTooLarge = "body_too_large"
    /// A POST body not sent as `Content-Type: application/json`.
    case unsupportedMediaType = "unsupported_media_type"
    /// A `Content-Encoding` other than gzip (or none).
    case unsupportedContentEncoding = "unsupported_content_encoding"
    /// A body marked `Content-Encoding: gzip` that is not valid gzip.
    case invalidBodyEncoding = "invalid_body_encoding"
    /// No `Authorization: Bearer` token, or one the server does not know or has revoked.
    case unauthorized
    /// The token is valid but not for this dataset.
    case forbidden
    /// A read-only token tried to push.
    case readOnlyToken = "read_only_token"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case protocolUnsupported = "protocol_unsupported"
    /// The dataset is at another major schema version; `requiredMajorVersion` says which.
    case upgradeRequired = "upgrade_required"
    /// Another client announced the same schema version with a different fingerprint.
    case schemaConflict = "schema_conflict"
    /// The server cannot serve now (storage unreachable, shutting down); retry after `Retry-After`.
    case unavailable
    case internalError = "internal_error"

    public var status: Int {
        switch self {
        case .malformedJSON, .invalidMessage, .invalidChange, .clockOutOfRange, .tooManyChanges, .invalidCursor,
            .protocolUnsupported, .invalidBodyEncoding:
            400
        case .bodyTooLarge: 413
        case .unsupportedMediaType, .unsupportedContentEncoding: 415
        case .unauthorized: 401
        case .forbidden, .readOnlyToken: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .upgradeRequired, .schemaConflict: 409
        case .unavailable: 503
        case .internalError: 500
        }
    }
}
