import COpenSSL
import Foundation

/// An RSA or P-256 public key that checks JSON Web Token signatures (RS256: RSASSA-PKCS1-v1_5 with
/// SHA-256; ES256: ECDSA with SHA-256, the signature as the 64 bytes of R and S, RFC 7518 section
/// 3.4), or a key pair made by ``generate(_:)`` that also signs (for tests and tools). Owns its
/// libcrypto `EVP_PKEY`; feature code never sees it.
///
/// ```swift
/// let key = try AsymmetricKey.publicKeys(pem: pemText)[0]
/// let valid = key.verify(signature, of: Data(signingInput.utf8))
/// ```
///
/// See <https://www.openssl.org/docs/man3.0/man3/EVP_DigestVerifyInit.html> and
/// <https://www.openssl.org/docs/man3.0/man3/EVP_PKEY_fromdata.html>.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never changed after it is made, and libcrypto allows
/// one key to be used by several threads at once for signing and verifying (each operation has its
/// own `EVP_MD_CTX`).
final class AsymmetricKey: @unchecked Sendable {
    enum Kind: String, Sendable {
        case rsa = "RSA"
        case p256 = "EC P-256"

        /// The JWS algorithm this kind of key signs with: the only one it is used for.
        var algorithm: String { self == .rsa ? "RS256" : "ES256" }
    }

    /// RSA keys shorter than this are refused (RFC 7518 section 3.3 asks for 2048 bits or more).
    static let minimumRSABits: Int32 = 2048

    let kind: Kind
    private let key: OpaquePointer

    private init(kind: Kind, key: OpaquePointer) {
        self.kind = kind
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// The keys of every `PUBLIC KEY` block in `pem`, in order. Refuses a file with none, a block of
    /// another kind (a private key or a certificate: give the public key alone), and keys other than
    /// RSA of 2048 bits or more and EC on P-256.
    static func publicKeys(pem: String) throws(ServerError) -> [AsymmetricKey] {
        var keys: [AsymmetricKey] = []
        var rest = Substring(pem)
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else { break }
            let label = String(rest[begin.upperBound..<labelEnd.lowerBound])
            guard label == "PUBLIC KEY" else {
                throw ServerError(
                    .invalidArgument, "block \(keys.count + 1) is a \(label), not a PUBLIC KEY",
                    fix: label.contains("CERTIFICATE")
                        ? "extract its key with `openssl x509 -pubkey -noout -in FILE`"
                        : "give the public key alone (`openssl pkey -pubout`)")
            }
            guard let end = rest[labelEnd.upperBound...].range(of: "-----END PUBLIC KEY-----") else {
                throw ServerError(.invalidArgument, "block \(keys.count + 1) has no END PUBLIC KEY line")
            }
            let block = String(rest[begin.lowerBound..<end.upperBound]) + "\n"
            keys.append(try publicKey(pemBlock: block, number: keys.count + 1))
            rest = rest[end.upperBound...]
        }
        guard !keys.isEmpty else { throw ServerError(.invalidArgument, "there is no PUBLIC KEY block in it") }
        return keys
    }

    private static func publicKey(pemBlock: String, number: Int) throws(ServerError) -> AsymmetricKey {
        let bytes = Array(pemBlock.utf8)
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        ERR_clear_error()
        guard let parsed else {
            throw ServerError(.invalidArgument, "block \(number) is not a public key libcrypto can read")
        }
        return try checked(parsed, what: "block \(number)")
    }

    /// An RSA public key from its modulus and public exponent (big-endian bytes, as a JWK's `n` and
    /// `e` carry them).
    static func rsa(modulus: Data, exponent: Data) throws(ServerError) -> AsymmetricKey {
        try fromParameters(name: "RSA", what: "the RSA key") { parameters in
            parameters.push(number: modulus, as: "n") && parameters.push(number: exponent, as: "e")
        }
    }

    /// A P-256 public key from its point's coordinates (32 bytes each, as a JWK's `x` and `y`).
    static func p256(x: Data, y: Data) throws(ServerError) -> AsymmetricKey {
        guard x.count == 32, y.count == 32 else {
            throw ServerError(
                .invalidArgument, "a P-256 key's x and y are 32 bytes each, not \(x.count) and \(y.count)")
        }
        return try fromParameters(name: "EC", what: "the P-256 key") { parameters in
            parameters.push(text: "prime256v1", as: "group") && parameters.push(bytes: Data([4]) + x + y, as: "pub")
        }
    }

    private static func fromParameters(
        name: String, what: String, _ push: (ParameterBuild) -> Bool
    ) throws(ServerError) -> AsymmetricKey {
        defer { ERR_clear_error() }
        guard let build = ParameterBuild() else { throw ServerError(.crypto, "libcrypto is out of memory") }
        guard push(build), let parameters = build.parameters() else {
            throw ServerError(.invalidArgument, "\(what) has values libcrypto cannot take")
        }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, name, nil) else {
            throw ServerError(.crypto, "libcrypto has no \(name) keys")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &key, ostore_evp_pkey_public_key_selection(), parameters) == 1, let key
        else {
            throw ServerError(.invalidArgument, "\(what) is not a valid public key")
        }
        return try checked(key, what: what)
    }

    /// Takes `key` when it is of a kind this server verifies with; frees it otherwise.
    private static func checked(_ key: OpaquePointer, what: String) throws(ServerError) -> AsymmetricKey {
        if EVP_PKEY_is_a(key, "RSA") == 1 {
            let bits = EVP_PKEY_get_bits(key)
            guard bits >= minimumRSABits else {
                EVP_PKEY_free(key)
                throw ServerError(
                    .invalidArgument, "\(what) is an RSA key of \(bits) bits; RS256 needs \(minimumRSABits) or more")
            }
            return AsymmetricKey(kind: .rsa, key: key)
        }
        if EVP_PKEY_is_a(key, "EC") == 1 {
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            let named = EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
            let group = named ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
            guard group == "prime256v1" || group == "P-256" else {
                EVP_PKEY_free(key)
                throw ServerError(.invalidArgument, "\(what) is an EC key on curve \(group); ES256 needs P-256")
            }
            return AsymmetricKey(kind: .p256, key: key)
        }
        EVP_PKEY_free(key)
        throw ServerError(.invalidArgument, "\(what) is neither an RSA nor an EC P-256 key")
    }

    /// Whether `signature` is this key's signature of `message` (for ES256, the 64 bytes of R and S).
    func verify(_ signature: Data, of message: Data) -> Bool {
        defer { ERR_clear_error() }
        let der: [UInt8]
        switch kind {
        case .rsa: der = [UInt8](signature)
        case .p256:
            guard signature.count == 64, let encoded = ECDSASignature.der(fromRaw: signature) else { return false }
            der = encoded
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return der.withUnsafeBufferPointer { signatureBytes in
            message.withUnsafeBytes { messageBytes in
                EVP_DigestVerify(
                    context, signatureBytes.baseAddress, signatureBytes.count,
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count) == 1
            }
        }
    }

    // MARK: Key pairs, for tests and tools

    /// A new key pair of `kind` (RSA of 2048 bits).
    static func generate(_ kind: Kind) throws(ServerError) -> AsymmetricKey {
        defer { ERR_clear_error() }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, kind == .rsa ? "RSA" : "EC", nil) else {
            throw ServerError(.crypto, "libcrypto has no \(kind.rawValue) keys")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
            kind == .rsa
                ? EVP_PKEY_CTX_set_rsa_keygen_bits(context, minimumRSABits) == 1
                : EVP_PKEY_CTX_set_group_name(context, "P-256") == 1,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw ServerError(.crypto, "libcrypto could not make a \(kind.rawValue) key") }
        return AsymmetricKey(kind: kind, key: key)
    }

    /// This key pair's signature of `message` (for ES256, the 64 bytes of R and S).
    func sign(_ message: Data) throws(ServerError) -> Data {
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { throw ServerError(.crypto, "libcrypto is out of memory") }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        let bytes = [UInt8](message)
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
            EVP_DigestSign(context, nil, &length, bytes, bytes.count) == 1
        else { throw ServerError(.crypto, "libcrypto cannot sign with this key (is it a public key only?)") }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, bytes, bytes.count) == 1 else {
            throw ServerError(.crypto, "libcrypto could not sign")
        }
        let der = Data(signature.prefix(length))
        guard kind == .p256 else { return der }
        guard let raw = ECDSASignature.raw(fromDER: der) else { throw ServerError(.crypto, "libcrypto signed oddly") }
        return raw
    }

    /// The public key as a `PUBLIC KEY` PEM block.
    var publicKeyPEM: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, key) == 1 else { return "" }
        var pem = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        let read = BIO_read(bio, &pem, Int32(pem.count))
        return String(decoding: pem.prefix(max(Int(read), 0)), as: UTF8.self)
    }

    /// The public key as a JSON Web Key's members (RFC 7517, 7518 section 6): `kty` and `n`, `e` or
    /// `crv`, `x`, `y`, in base64url.
    var publicJWK: [String: String] {
        switch kind {
        case .rsa:
            return ["kty": "RSA", "n": bigNumber("n").base64URLEncoded, "e": bigNumber("e").base64URLEncoded]
        case .p256:
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            _ = EVP_PKEY_get_octet_string_param(key, "pub", &point, point.count, &length)
            return [
                "kty": "EC", "crv": "P-256", "x": Data(point[1..<33]).base64URLEncoded,
                "y": Data(point[33..<65]).base64URLEncoded,
            ]
        }
    }

    private func bigNumber(_ name: String) -> Data {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else { return Data() }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
        _ = BN_bn2bin(number, &bytes)
        return Data(bytes)
    }
}

/// An `OSSL_PARAM_BLD` and everything it refers to: the builder keeps pointers to the names,
/// strings, bytes and numbers pushed, not copies, until ``parameters()`` has made the array.
private final class ParameterBuild {
    private let builder: OpaquePointer
    private var memory: [UnsafeMutableRawPointer] = []
    private var numbers: [OpaquePointer] = []

    init?() {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        self.builder = builder
    }

    deinit {
        OSSL_PARAM_BLD_free(builder)
        for number in numbers { BN_free(number) }
        for block in memory { free(block) }
    }

    /// A copy of `text` that lives as long as the build.
    private func kept(_ text: String) -> UnsafeMutablePointer<CChar>? {
        guard let copy = strdup(text) else { return nil }
        memory.append(UnsafeMutableRawPointer(copy))
        return copy
    }

    func push(number bytes: Data, as name: String) -> Bool {
        let array = [UInt8](bytes)
        guard !array.isEmpty, let key = kept(name), let number = BN_bin2bn(array, Int32(array.count), nil) else {
            return false
        }
        numbers.append(number)
        return OSSL_PARAM_BLD_push_BN(builder, key, number) == 1
    }

    func push(text: String, as name: String) -> Bool {
        guard let key = kept(name), let value = kept(text) else { return false }
        return OSSL_PARAM_BLD_push_utf8_string(builder, key, value, 0) == 1
    }

    func push(bytes: Data, as name: String) -> Bool {
        guard let key = kept(name), let block = malloc(max(bytes.count, 1)) else { return false }
        memory.append(block)
        bytes.copyBytes(to: block.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        return OSSL_PARAM_BLD_push_octet_string(builder, key, block, bytes.count) == 1
    }

    /// The parameters pushed, as an array the caller frees with `OSSL_PARAM_free`.
    func parameters() -> UnsafeMutablePointer<OSSL_PARAM>? { OSSL_PARAM_BLD_to_param(builder) }
}

/// ECDSA signatures both ways: JWS's 64 bytes of R and S, libcrypto's DER.
private enum ECDSASignature {
    static func der(fromRaw raw: Data) -> [UInt8]? {
        let bytes = [UInt8](raw)
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        guard let r = BN_bin2bn(bytes, 32, nil) else { return nil }
        guard let s = BN_bin2bn(Array(bytes[32...]), 32, nil) else {
            BN_free(r)
            return nil
        }
        // ECDSA_SIG_set0 takes both numbers.
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }

    static func raw(fromDER der: Data) -> Data? {
        let bytes = [UInt8](der)
        let signature: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { return nil }
        defer { ECDSA_SIG_free(signature) }
        var r = [UInt8](repeating: 0, count: 32)
        var s = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(ECDSA_SIG_get0_r(signature), &r, 32) == 32,
            BN_bn2binpad(ECDSA_SIG_get0_s(signature), &s, 32) == 32
        else { return nil }
        return Data(r + s)
    }
}
