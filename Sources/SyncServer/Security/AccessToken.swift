import Foundation

/// A bearer token: `ost_` and 43 base64url characters (32 random bytes). The server keeps only
/// its SHA-256 digest, so a copy of the server's data cannot be used to sync; the token itself
/// is shown once, when it is created.
///
/// ```swift
/// let token = try AccessToken.generate()
/// print(token.secret)        // give to the client, once
/// store(token.digest)        // what the server keeps
/// ```
struct AccessToken: Sendable {
    static let prefix = "ost_"

    let secret: String
    var digest: Data { Self.digest(of: secret) }

    static func generate() throws(ServerError) -> AccessToken {
        AccessToken(secret: prefix + (try Crypto.randomBytes(32)).base64URLEncoded)
    }

    static func digest(of secret: String) -> Data { Crypto.sha256(Data(secret.utf8)) }

    /// A short public name for a token (`tok_` and 12 hex digits), for listing and revoking it
    /// without handling the secret.
    static func generateID() throws(ServerError) -> String {
        "tok_" + (try Crypto.randomBytes(6)).map { String(format: "%02x", $0) }.joined()
    }

    /// The secret from an `Authorization` header value; nil unless it is `Bearer <token>` with a
    /// token of the right shape (checked before any lookup, so junk never reaches storage).
    static func secret(fromAuthorization header: String?) -> String? {
        guard let token = bearer(fromAuthorization: header).map(String.init) else { return nil }
        guard token.hasPrefix(prefix), token.utf8.count == prefix.utf8.count + 43,
            token.utf8.dropFirst(prefix.utf8.count).allSatisfy({ byte in
                (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || byte == 45
                    || byte == 95
            })
        else { return nil }
        return token
    }

    /// The token of an `Authorization` header value of the form `Bearer <token>` (the scheme in
    /// any case, spaces between), whatever the token's kind; nil for any other value.
    static func bearer(fromAuthorization header: String?) -> Substring? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1]
    }
}
