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
        error = Detail(
            code: code, message: message, changeIndex: changeIndex, requiredMajorVersion: requiredMajorVersion)
    }

    public var status: Int { error.code.status }
}

/// The stable error codes and the HTTP status each comes with.
public enum ErrorCode: String, Codable, Sendable, Hashable, CaseIterable {
    /// The body is not JSON, is truncated, repeats a key in one object, or nests too deeply.
    case malformedJSON = "malformed_json"
    /// JSON, but not the message: a field missing or of the wrong type, a malformed site id,
    /// clock, value or schema version (a cursor that is a string but not one this dataset issued
    /// is `invalid_cursor`).
    case invalidMessage = "invalid_message"
    /// One change breaks a rule (identifier, value, operation, site, sequence); `changeIndex` says which.
    case invalidChange = "invalid_change"
    /// One change breaks a rule of the schema version it was pushed under (section 5.2, "Changes
    /// and the schema": an unknown table or column, a key that is not the table's, null in a NOT
    /// NULL column, an insert without a NOT NULL column that has no default, a value a STRICT
    /// column does not take): every client of that version would refuse it. `changeIndex` says
    /// which; the client keeps it as refused, as an `invalid_change`.
    case schemaViolation = "schema_violation"
    /// A change's clock is further ahead of the server's than the drift limit.
    case clockOutOfRange = "clock_out_of_range"
    /// A push with more changes than ``Limits/maxChangesPerPush``.
    case tooManyChanges = "too_many_changes"
    /// A pull's cursor was not issued for this dataset (or can no longer be served); the client
    /// drops it and pulls from the start.
    case invalidCursor = "invalid_cursor"
    /// The body is longer than ``Limits/maxBodyBytes``, declared or read, before or after gunzip.
    case bodyTooLarge = "body_too_large"
    /// A POST body not sent as `Content-Type: application/json`.
    case unsupportedMediaType = "unsupported_media_type"
    /// A `Content-Encoding` other than gzip (or none).
    case unsupportedContentEncoding = "unsupported_content_encoding"
    /// A body marked `Content-Encoding: gzip` that is not valid gzip.
    case invalidBodyEncoding = "invalid_body_encoding"
    /// No `Authorization: Bearer` token, or one the server does not know or has revoked.
    case unauthorized
    /// The token is valid but not for this dataset (or the dataset does not exist: existence is not
    /// revealed).
    case forbidden
    /// A read-only token tried to push.
    case readOnlyToken = "read_only_token"
    /// The request's site id is bound to another token of the dataset (the first that said hello
    /// or pushed as it, unless since revoked): one token holder cannot push as another's device.
    case siteForbidden = "site_forbidden"
    /// A change of a push is outside its writer's write scope under the dataset's scope rules
    /// (section 17): `changeIndex` names the first; nothing of the push is stored.
    case outOfScope = "out_of_scope"
    /// No such route, or a dataset name that is not `[a-z0-9][a-z0-9_-]{0,62}`.
    case notFound = "not_found"
    /// A known route with another method; the `Allow` header names the right one.
    case methodNotAllowed = "method_not_allowed"
    /// A push or pull names a protocol version the server does not speak.
    case protocolUnsupported = "protocol_unsupported"
    /// The dataset is at another major schema version; `requiredMajorVersion` says which.
    case upgradeRequired = "upgrade_required"
    /// Another client announced the same schema version with a different fingerprint.
    case schemaConflict = "schema_conflict"
    /// A hello announced a major schema version above the highest the dataset's operator allows it
    /// to move to: the dataset stays where it is and the app keeps its changes queued until the
    /// operator allows that major.
    case majorNotAllowed = "major_not_allowed"
    /// A push's ``PushRequest/after`` names a change of its site the server has not stored, and it
    /// did not arrive within the server's wait: nothing of the push is stored. The client pushes
    /// again from its oldest unacknowledged change.
    case previousPushMissing = "previous_push_missing"
    /// The request's HTTP framing is ambiguous or broken (RFC 9112): two `Content-Length` fields,
    /// `Transfer-Encoding` beside `Content-Length`, a header name that is not a token, a missing or
    /// repeated `Host`, a repeated `Authorization`, `Content-Type` or `Content-Encoding`. The
    /// connection is closed after the answer.
    case malformedRequest = "malformed_request"
    /// More header fields than the server reads (the server documents how many), or headers larger than its per-connection memory.
    case headersTooLarge = "headers_too_large"
    /// A body sent without `Content-Length` (chunked), which the server does not read.
    case lengthRequired = "length_required"
    /// A request target with more query parameters than the server reads.
    case uriTooLong = "uri_too_long"
    /// Too many requests from this token or address; retry after `Retry-After` seconds.
    case rateLimited = "rate_limited"
    /// A pull asked to wait while as many pulls wait as the server holds for this address or in
    /// all (section 10.5); retry after `Retry-After` seconds, or pull without waiting meanwhile.
    case tooManyWaitingPulls = "too_many_waiting_pulls"
    /// The server cannot serve now (storage unreachable, shutting down); retry after `Retry-After`.
    case unavailable
    /// A fault in the server; retried with backoff.
    case internalError = "internal_error"

    public var status: Int {
        switch self {
        case .malformedJSON, .invalidMessage, .invalidChange, .schemaViolation, .clockOutOfRange, .tooManyChanges,
            .invalidCursor,
            .protocolUnsupported, .invalidBodyEncoding, .malformedRequest:
            400
        case .lengthRequired: 411
        case .uriTooLong: 414
        case .headersTooLarge: 431
        case .bodyTooLarge: 413
        case .unsupportedMediaType, .unsupportedContentEncoding: 415
        case .unauthorized: 401
        case .forbidden, .readOnlyToken, .siteForbidden, .outOfScope: 403
        case .notFound: 404
        case .methodNotAllowed: 405
        case .upgradeRequired, .schemaConflict, .previousPushMissing, .majorNotAllowed: 409
        case .rateLimited, .tooManyWaitingPulls: 429
        case .unavailable: 503
        case .internalError: 500
        }
    }

    /// Whether a client tries the same request again later: for these it waits `Retry-After`
    /// seconds when given, else backs off; every other error needs a change on the client's side
    /// (a fix, a new token, an upgrade) and is not retried as is.
    public var isRetried: Bool {
        switch self {
        case .rateLimited, .tooManyWaitingPulls, .unavailable, .internalError: true
        default: false
        }
    }
}
