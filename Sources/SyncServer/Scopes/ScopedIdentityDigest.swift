import Foundation

/// What a scoped pull cursor keeps of the claims it was issued to: the SHA-256 of the claims,
/// sorted, so that a token with other claims (a user moved to another team) does not read on from
/// a cursor of the scope its old claims gave.
///
/// ```swift
/// let digest = ScopedIdentityDigest.of(["team": "blue"])
/// ```
enum ScopedIdentityDigest {
    static func of(_ claims: [String: String]) -> String {
        // As JSON: no pair of claims reads as another.
        let pairs = claims.keys.sorted().map { [$0, claims[$0]!] }
        let text = (try? JSONSerialization.data(withJSONObject: pairs)) ?? Data()
        return Crypto.sha256(text).base64URLEncoded
    }
}
