import Foundation

/// The keys one dataset verifies JSON Web Tokens with, as read from the files its
/// ``JWTConfiguration/Dataset`` names: public keys, each with its `kid` when the file gives one
/// (a JWKS file does; a PEM file does not), and the HS256 secret.
///
/// ```swift
/// let keys = try JWTKeys.read(for: configuration.datasets["family"]!)
/// keys.algorithms  // ["ES256"]
/// ```
struct JWTKeys: Sendable {
    struct PublicKey: Sendable {
        let id: String?
        let key: AsymmetricKey
    }

    /// An HS256 secret shorter than SHA-256's output is refused (RFC 7518 section 3.2).
    static let minimumSecretBytes = 32

    let publicKeys: [PublicKey]
    let secret: Data?

    /// The algorithms these keys verify, each only with keys of its own kind: a token's `alg`
    /// never makes a public key serve as an HMAC secret.
    var algorithms: [String] {
        var names: [String] = []
        if secret != nil { names.append("HS256") }
        for kind in [AsymmetricKey.Kind.rsa, .p256] where publicKeys.contains(where: { $0.key.kind == kind }) {
            names.append(kind.algorithm)
        }
        return names
    }

    static func read(for dataset: JWTConfiguration.Dataset) throws(ServerError) -> JWTKeys {
        var publicKeys: [PublicKey] = []
        if let file = dataset.keysFile {
            let text = try contents(of: file)
            do throws(ServerError) {
                publicKeys =
                    text.drop(while: \.isWhitespace).hasPrefix("{")
                    ? try jwks(text) : try AsymmetricKey.publicKeys(pem: text).map { PublicKey(id: nil, key: $0) }
            } catch {
                throw ServerError(.invalidArgument, "\(file.path): \(error.message)", fix: error.fix)
            }
        }
        var secret: Data?
        if let file = dataset.secretFile {
            let bytes = Data(try contents(of: file).utf8)
            // A trailing newline, as `echo` and editors leave, is no part of the secret.
            let trimmed = bytes.last == UInt8(ascii: "\n") ? bytes.dropLast() : bytes[...]
            guard trimmed.count >= minimumSecretBytes else {
                throw ServerError(
                    .invalidArgument,
                    "\(file.path) holds \(trimmed.count) bytes; an HS256 secret needs "
                        + "\(minimumSecretBytes) or more",
                    fix: "make one with `openssl rand -base64 48 > \(file.path)`")
            }
            secret = Data(trimmed)
        }
        return JWTKeys(publicKeys: publicKeys, secret: secret)
    }

    private static func contents(of file: URL) throws(ServerError) -> String {
        do {
            return try String(contentsOf: file, encoding: .utf8)
        } catch {
            throw ServerError(.invalidArgument, "\(file.path) cannot be read: \(error.localizedDescription)")
        }
    }

    /// The signing keys of a JWKS document (RFC 7517 section 5): RSA keys and EC keys on P-256.
    /// Keys for encryption (`use` "enc") or for other algorithms are passed over, as an identity
    /// provider's set may hold them; a set with no usable key, a key id given twice, or a usable
    /// key with bad members is refused.
    private static func jwks(_ text: String) throws(ServerError) -> [PublicKey] {
        guard let document = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let entries = document["keys"] as? [Any]
        else { throw ServerError(.invalidArgument, "it is not a JWKS document (an object with a \"keys\" array)") }
        var keys: [PublicKey] = []
        for (index, entry) in entries.enumerated() {
            guard let members = entry as? [String: Any] else {
                throw ServerError(.invalidArgument, "keys[\(index)] is not an object")
            }
            let id = members["kid"] as? String
            let name = id.map { "key \"\($0)\"" } ?? "keys[\(index)]"
            if let use = members["use"] as? String, use != "sig" { continue }
            func bytes(_ member: String) throws(ServerError) -> Data {
                guard let text = members[member] as? String, let data = Data(base64URLEncoded: text), !data.isEmpty
                else { throw ServerError(.invalidArgument, "\(name) has no base64url \"\(member)\"") }
                return data
            }
            let algorithm = members["alg"] as? String
            let key: AsymmetricKey
            switch (members["kty"] as? String, members["crv"] as? String) {
            case ("RSA", _) where algorithm == nil || algorithm == "RS256":
                key = try AsymmetricKey.rsa(modulus: try bytes("n"), exponent: try bytes("e"))
            case ("EC", "P-256") where algorithm == nil || algorithm == "ES256":
                key = try AsymmetricKey.p256(x: try bytes("x"), y: try bytes("y"))
            default: continue
            }
            if let id, keys.contains(where: { $0.id == id }) {
                throw ServerError(.invalidArgument, "two keys have kid \"\(id)\"")
            }
            keys.append(PublicKey(id: id, key: key))
        }
        guard !keys.isEmpty else {
            throw ServerError(.invalidArgument, "it has no RS256 or ES256 signing key (RSA, or EC on P-256)")
        }
        return keys
    }
}
