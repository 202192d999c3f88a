import COpenSSL
import Foundation

/// The server's thin typed layer over libcrypto: SHA-256, HMAC-SHA256, constant-time comparison
/// and cryptographically secure random bytes. Feature code never calls libcrypto directly.
///
/// ```swift
/// let digest = Crypto.sha256(Data("ost_…".utf8))
/// let same = Crypto.constantTimeEqual(digest, stored)
/// let mac = Crypto.hmacSHA256(key: secret, message: Data("signed text".utf8))
/// ```
///
/// See <https://www.openssl.org/docs/man3.0/man3/SHA256.html>,
/// <https://www.openssl.org/docs/man3.0/man3/HMAC.html>,
/// <https://www.openssl.org/docs/man3.0/man3/CRYPTO_memcmp.html> and
/// <https://www.openssl.org/docs/man3.0/man3/RAND_bytes.html>.
enum Crypto {
    static func sha256(_ data: Data) -> Data {
        var digest = Data(count: Int(SHA256_DIGEST_LENGTH))
        digest.withUnsafeMutableBytes { output in
            data.withUnsafeBytes { input in
                _ = SHA256(
                    input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count,
                    output.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return digest
    }

    /// The HMAC-SHA256 of `message` under `key` (RFC 2104): 32 bytes.
    static func hmacSHA256(key: Data, message: Data) throws(ServerError) -> Data {
        var mac = Data(count: Int(SHA256_DIGEST_LENGTH))
        var length: UInt32 = 0
        // libcrypto reads no byte of an empty key or message, but wants a pointer all the same.
        var none: UInt8 = 0
        let done = mac.withUnsafeMutableBytes { output in
            key.withUnsafeBytes { keyBytes in
                message.withUnsafeBytes { input in
                    withUnsafeMutablePointer(to: &none) { empty in
                        HMAC(
                            EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(empty), Int32(keyBytes.count),
                            input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(empty),
                            input.count, output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) != nil
                    }
                }
            }
        }
        // A MAC left unwritten would be all zeros: one anybody could send.
        guard done, length == SHA256_DIGEST_LENGTH else {
            throw ServerError(.crypto, "libcrypto could not compute an HMAC-SHA256 (HMAC)")
        }
        return mac
    }

    /// Whether two byte strings are equal, in time that depends only on their length.
    static func constantTimeEqual(_ lhs: Data, _ rhs: Data) -> Bool {
        guard lhs.count == rhs.count else { return false }
        guard !lhs.isEmpty else { return true }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, lhs.count) == 0 }
        }
    }

    static func randomBytes(_ count: Int) throws(ServerError) -> Data {
        var bytes = Data(count: count)
        let status = bytes.withUnsafeMutableBytes { buffer in
            RAND_bytes(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(count))
        }
        guard status == 1 else {
            throw ServerError(.crypto, "the system's random number generator failed (RAND_bytes)")
        }
        return bytes
    }
}
