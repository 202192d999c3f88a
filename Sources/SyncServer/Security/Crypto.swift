import COpenSSL
import Foundation

/// The server's thin typed layer over libcrypto: SHA-256, constant-time comparison and
/// cryptographically secure random bytes. Feature code never calls libcrypto directly.
///
/// ```swift
/// let digest = Crypto.sha256(Data("ost_…".utf8))
/// let same = Crypto.constantTimeEqual(digest, stored)
/// ```
///
/// See <https://www.openssl.org/docs/man3.0/man3/SHA256.html>,
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
