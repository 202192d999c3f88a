/// An app's schema version on the wire, `"major.minor.patch"`. Peers of one major version sync;
/// a higher minor adds tables and columns; a new major is a break (see ``Compatibility``).
///
/// ```swift
/// let version = SchemaVersion("1.1.0")!
/// #expect(version.major == 1)
/// ```
public struct SchemaVersion: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public let major: Int
    public let minor: Int
    public let patch: Int

    public init(_ major: Int, _ minor: Int, _ patch: Int = 0) {
        self.major = max(major, 0)
        self.minor = max(minor, 0)
        self.patch = max(patch, 0)
    }

    /// Parses `major.minor.patch`, each part at most 9 decimal digits without leading zeros (so
    /// one version has one text); nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ isCanonicalDecimal($0, maximumDigits: 9) }) else { return nil }
        self.init(Int(parts[0])!, Int(parts[1])!, Int(parts[2])!)
    }

    public var description: String { "\(major).\(minor).\(patch)" }

    public static func < (lhs: SchemaVersion, rhs: SchemaVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let version = SchemaVersion(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a schema version is \"major.minor.patch\"")
        }
        self = version
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
