import Foundation
import SyncProtocol

/// A JSON Web Token in compact form (RFC 7519, signed as RFC 7515's JWS): `HEADER.PAYLOAD.SIGNATURE`,
/// each part base64url. Taken apart here and not trusted yet: ``JWTVerifier`` checks its signature
/// and claims.
///
/// ```swift
/// let token = try JSONWebToken("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJib2IifQ.…")
/// token.algorithm  // "ES256"
/// ```
struct JSONWebToken: Sendable {
    /// Longest token read: far more than any identity provider issues, bounded so that no request
    /// makes the server decode a large one.
    static let maximumLength = 8_192
    /// Deepest nesting of the header's and the payload's JSON.
    static let maximumDepth = 8

    /// The header's `alg`.
    let algorithm: String
    /// The header's `kid`, naming the key that signed it.
    let keyID: String?
    let claims: [String: Claim]
    /// `HEADER.PAYLOAD`: what the signature covers.
    let signingInput: Data
    let signature: Data

    /// A claim's value: a string, a number, a boolean, a list of strings, or something else (kept
    /// so that a claim of an unexpected type is refused by name rather than ignored).
    enum Claim: Sendable, Equatable, Decodable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case strings([String])
        case other

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(String.self) {
                self = .string(value)
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode([String].self) {
                self = .strings(value)
            } else {
                self = .other
            }
        }

        /// The claim as a rule compares it: strings as they are, numbers and booleans as JSON
        /// writes them; nil for lists and objects.
        var text: String? {
            switch self {
            case .string(let value): value
            case .bool(let value): value ? "true" : "false"
            case .number(let value):
                value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
            case .strings, .other: nil
            }
        }
    }

    private struct Header: Decodable {
        var alg: String?
        var kid: String?
        var crit: [String]?
    }

    init(_ text: String) throws(JWTRefusal) {
        guard text.utf8.count <= Self.maximumLength else {
            throw .malformed("it is longer than \(Self.maximumLength) bytes")
        }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw .malformed(
                parts.count == 5
                    ? "it is encrypted (JWE); send a signed token"
                    : "it is not three base64url parts separated by dots")
        }
        guard let headerJSON = Data(base64URLEncoded: parts[0]), let payloadJSON = Data(base64URLEncoded: parts[1]),
            let signature = Data(base64URLEncoded: parts[2])
        else { throw .malformed("a part of it is not base64url") }
        // By the protocol's JSON rules, before any decoder sees them: a claim given twice (which
        // decoders resolve differently) and nesting deeper than a token needs are refused.
        for (name, json) in [("header", headerJSON), ("payload", payloadJSON)] {
            do {
                try StrictJSON.validate(Array(json), maximumDepth: Self.maximumDepth)
            } catch {
                throw .malformed("its \(name) is not strict JSON (\(error))")
            }
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerJSON) else {
            throw .malformed("its header is not a JSON object")
        }
        guard let algorithm = header.alg else { throw .malformed("its header names no algorithm (alg)") }
        // RFC 7515 section 4.1.11: extensions a recipient does not understand make it refuse.
        if let critical = header.crit, !critical.isEmpty {
            throw .malformed("its header has critical extensions (crit) this server does not understand")
        }
        guard let claims = try? JSONDecoder().decode([String: Claim].self, from: payloadJSON) else {
            throw .malformed("its payload is not a JSON object")
        }
        self.algorithm = algorithm
        keyID = header.kid
        self.claims = claims
        signingInput = Data(text.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        self.signature = signature
    }

    /// The token of an `Authorization: Bearer` header when it has a JWT's shape (two dots, no
    /// spaces); nil otherwise.
    static func bearer(fromAuthorization header: String?) -> String? {
        guard let token = AccessToken.bearer(fromAuthorization: header) else { return nil }
        guard token.utf8.count <= maximumLength, token.utf8.filter({ $0 == UInt8(ascii: ".") }).count == 2 else {
            return nil
        }
        return String(token)
    }
}

/// Why a JSON Web Token was refused: the check that failed, never the token. The protocol's 401
/// carries it.
enum JWTRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    case algorithm(String)
    case key(String)
    case signature
    case claim(String)
    case notConfigured

    var description: String {
        switch self {
        case .malformed(let reason), .algorithm(let reason), .key(let reason), .claim(let reason):
            "the JSON Web Token was refused: \(reason)"
        case .signature: "the JSON Web Token was refused: its signature does not verify"
        case .notConfigured:
            "this dataset accepts no JSON Web Tokens; send a token made by `ostore-server token create`"
        }
    }
}
