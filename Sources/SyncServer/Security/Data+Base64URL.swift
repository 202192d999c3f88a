import Foundation

extension Data {
    /// The bytes in base64url without padding (RFC 4648, section 5): safe in JSON strings and URLs
    /// as they are, for tokens and pull cursors.
    ///
    /// ```swift
    /// Data([0xFB, 0xFF]).base64URLEncoded  // "-_8"
    /// ```
    var base64URLEncoded: String {
        // Byte by byte, from a table: every pull's cursor is sealed and opened in base64url, and
        // Foundation's base64 followed by three string replacements costs many times as much.
        let alphabet = Base64URL.alphabet
        let count = self.count
        return String(unsafeUninitializedCapacity: (count * 4 + 2) / 3) { text in
            var written = 0
            func put(_ group: UInt32, digits: Int) {
                for position in 0..<digits {
                    text[written] = alphabet[Int(group >> UInt32(18 - 6 * position) & 0x3F)]
                    written += 1
                }
            }
            withUnsafeBytes { bytes in
                var index = 0
                while index + 3 <= count {
                    put(
                        UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]), digits: 4
                    )
                    index += 3
                }
                switch count - index {
                case 1: put(UInt32(bytes[index]) << 16, digits: 2)
                case 2: put(UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8, digits: 3)
                default: break
                }
            }
            return written
        }
    }

    /// The bytes of base64url `text`, padded or not; nil when it is not base64url (a character
    /// outside its alphabet, a length no encoding has, or bits set past the last byte).
    init?(base64URLEncoded text: some StringProtocol) {
        var digits = Array(text.utf8)[...]
        var padding = 0
        while padding < 2, digits.last == UInt8(ascii: "=") {
            digits.removeLast()
            padding += 1
        }
        guard digits.count % 4 != 1, padding == 0 || (digits.count + padding) % 4 == 0 else { return nil }
        var bytes = Data(capacity: digits.count * 3 / 4)
        var group: UInt32 = 0
        var bits = 0
        for digit in digits {
            let value = Base64URL.value[Int(digit)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: group >> UInt32(bits)))
                group &= (1 << UInt32(bits)) - 1
            }
        }
        guard group == 0 else { return nil }
        self = bytes
    }
}

/// RFC 4648's base64url alphabet, both ways.
private enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    /// Each byte's value as a digit, 0xFF for a byte that is none.
    static let value: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, digit) in alphabet.enumerated() { table[Int(digit)] = UInt8(index) }
        return table
    }()
}
