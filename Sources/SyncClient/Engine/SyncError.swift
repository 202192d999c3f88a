import Foundation
import SyncProtocol

/// Everything that can stop a sync, with what to do about it. `isRetryable` tells the daemon
/// whether backing off and trying again can help.
///
/// ```swift
/// do { try engine.sync() } catch let error where error.kind == .upgradeRequired {
///     print("Update the app: \(error.message)")
/// }
/// ```
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The network: connection refused, timed out, TLS failed (curl's error in `message`).
        case transport
        /// The server answered with an error (`status`, `code`).
        case server
        /// The dataset moved to another major schema version: upgrade the app. Local changes stay queued.
        case upgradeRequired
        /// The server speaks no protocol version this client does.
        case protocolUnsupported
        /// The server's answer could not be read.
        case invalidAnswer
        /// The local store failed (reading the queue, applying changes).
        case store
    }

    public var kind: Kind
    public var message: String
    /// For `server`: the HTTP status and the protocol's error code.
    public var status: Int?
    public var code: ErrorCode?
    /// For `upgradeRequired`: the major version the dataset requires.
    public var requiredMajorVersion: Int?
    /// For a refused push: which change of the batch the server named.
    public var changeIndex: Int?
    /// Seconds the server asked to wait (`Retry-After`).
    public var retryAfterSeconds: Double?
    /// Whether trying again later can succeed without a change on this side.
    public var isRetryable: Bool

    public init(
        _ kind: Kind, _ message: String, status: Int? = nil, code: ErrorCode? = nil, requiredMajorVersion: Int? = nil,
        retryAfterSeconds: Double? = nil, isRetryable: Bool = false
    ) {
        self.kind = kind
        self.message = message
        self.status = status
        self.code = code
        self.requiredMajorVersion = requiredMajorVersion
        self.retryAfterSeconds = retryAfterSeconds
        self.isRetryable = isRetryable
    }

    public var description: String {
        switch kind {
        case .upgradeRequired:
            "the server's dataset needs app schema version \(requiredMajorVersion.map { "\($0).x" } ?? "newer"); "
                + "upgrade the app (local changes stay queued): \(message)"
        case .server: "the server refused (HTTP \(status ?? 0) \(code?.rawValue ?? "?")): \(message)"
        default: message
        }
    }

    /// The error of a non-200 answer, from its body when it is the protocol's error body.
    static func answer(_ reply: TransportReply, url: URL) -> SyncError {
        let body = try? JSONDecoder().decode(ErrorBody.self, from: reply.body)
        let code = body?.error.code
        let message = body?.error.message ?? "HTTP \(reply.status) from \(url.absoluteString)"
        if code == .upgradeRequired {
            return SyncError(
                .upgradeRequired, message, status: reply.status, code: code,
                requiredMajorVersion: body?.error.requiredMajorVersion)
        }
        // 429 and 5xx are transient; any other 4xx needs a change on this side.
        let retryable = reply.status == 429 || reply.status >= 500
        var error = SyncError(
            .server, message, status: reply.status, code: code, retryAfterSeconds: reply.retryAfterSeconds,
            isRetryable: retryable)
        error.changeIndex = body?.error.changeIndex
        return error
    }
}
