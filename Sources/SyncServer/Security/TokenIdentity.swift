import Foundation

/// Whom a token made by ``SyncStorage/createToken(dataset:readOnly:identity:)`` stands for, and
/// until when: a subject (the user), claims (names to strings, for rules to select rows by), an
/// expiry. A token without a subject stands for whoever holds it.
///
/// ```swift
/// let identity = TokenIdentity(subject: "bob", claims: ["team": "blue"], expiresAt: .now + 30 * 86_400)
/// try identity.check()
/// ```
public struct TokenIdentity: Sendable, Hashable {
    public var subject: String?
    public var claims: [String: String]
    public var expiresAt: Date?

    /// Most claims one token carries, and the longest name and value of each.
    public static let maximumClaims = 32
    public static let maximumClaimNameLength = 64
    public static let maximumClaimValueLength = 1_024
    /// Names a JSON Web Token gives a meaning of its own: not claims a token is made with.
    static let registeredClaimNames: Set<String> = ["sub", "exp", "nbf", "iat", "iss", "aud", "jti"]

    public init(subject: String? = nil, claims: [String: String] = [:], expiresAt: Date? = nil) {
        self.subject = subject
        self.claims = claims
        self.expiresAt = expiresAt
    }

    /// Refuses a subject or claims outside the bounds above, and an expiry already passed.
    public func check(now: Date = Date()) throws(ServerError) {
        if let subject {
            guard !subject.isEmpty, subject.utf8.count <= TokenGrant.maximumSubjectLength else {
                throw ServerError(
                    .invalidArgument,
                    "a subject is 1 to \(TokenGrant.maximumSubjectLength) bytes, not \(subject.utf8.count)")
            }
        }
        guard claims.count <= Self.maximumClaims else {
            throw ServerError(
                .invalidArgument, "a token carries at most \(Self.maximumClaims) claims, not \(claims.count)")
        }
        for (name, value) in claims.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, name.utf8.count <= Self.maximumClaimNameLength,
                name.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "=") })
            else {
                throw ServerError(
                    .invalidArgument,
                    "claim name \"\(name)\" is not 1 to \(Self.maximumClaimNameLength) printable ASCII characters "
                        + "without spaces or =")
            }
            guard !Self.registeredClaimNames.contains(name) else {
                throw ServerError(
                    .invalidArgument, "claim \(name) is a registered JSON Web Token claim",
                    fix: name == "sub" ? "give the subject with --subject" : name == "exp" ? "use --expires" : nil)
            }
            guard value.utf8.count <= Self.maximumClaimValueLength else {
                throw ServerError(
                    .invalidArgument, "claim \(name)'s value is longer than \(Self.maximumClaimValueLength) bytes")
            }
        }
        if let expiresAt, expiresAt <= now {
            throw ServerError(.invalidArgument, "the expiry \(expiresAt.formatted(.iso8601)) has passed already")
        }
    }

    /// The claims as storage keeps them: a JSON object with sorted keys; nil for none.
    var claimsJSON: String? {
        guard !claims.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(claims)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The claims of ``claimsJSON`` read back; none for nil.
    static func claims(fromJSON json: String?) -> [String: String] {
        guard let json else { return [:] }
        return (try? JSONDecoder().decode([String: String].self, from: Data(json.utf8))) ?? [:]
    }
}
