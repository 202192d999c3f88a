import Foundation

/// A site (a device's store) by its 16-byte id, written as 32 lowercase hexadecimal digits.
///
/// ```swift
/// let site = SiteID(bytes: Data(repeating: 0xab, count: 16))!
/// print(site)  // abababab…
/// ```
public struct SiteID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let bytes: Data

    public init?(bytes: Data) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses 32 hexadecimal digits (either case); nil for anything else.
    public init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var bytes = Data(capacity: 16)
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.bytes = bytes
    }

    /// Written from a table: `String(format:)` per byte was most of what a server spent
    /// re-encoding a pushed change.
    public var description: String {
        var text = [UInt8]()
        text.reserveCapacity(32)
        for byte in bytes {
            text.append(Self.hexDigits[Int(byte >> 4)])
            text.append(Self.hexDigits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Byte order, the tiebreak of last-writer-wins between equal clocks.
    public static func < (lhs: SiteID, rhs: SiteID) -> Bool { lhs.bytes.lexicographicallyPrecedes(rhs.bytes) }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let site = SiteID(hex: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a site id is 32 hexadecimal digits (16 bytes)")
        }
        self = site
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// A hexadecimal digit's value, either case.
    static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 48...57: byte - 48
        case 97...102: byte - 87
        case 65...70: byte - 55
        default: nil
        }
    }
}
