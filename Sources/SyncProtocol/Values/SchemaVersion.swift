/// An app's schema version, `"major.minor.patch"`: what a `VersionedSchema` declares, the
/// migration ledger records and the wire carries. Peers of one major version sync; a higher minor
/// adds tables and columns; a new major is a break (see ``Compatibility``). `Schema.Version` in
/// the store names this type.
///
/// ```swift
/// let version: SchemaVersion = "1.1.0"
/// #expect(version > SchemaVersion(1, 0, 0))
/// #expect(SchemaVersion(argument) == nil)  // for an argument "1.1": three parts, as the wire has them
/// ```
public struct SchemaVersion: Sendable, Hashable, Comparable, Codable, LosslessStringConvertible,
    ExpressibleByStringLiteral
{
    /// The largest part: 9 decimal digits (Protocol/README.md §7.3).
    public static let maximumPart = 999_999_999

    public let major: Int
    public let minor: Int
    public let patch: Int

    /// Traps when a part is negative or above ``maximumPart``: such a version has no text the
    /// protocol accepts.
    ///
    /// ```swift
    /// let version = SchemaVersion(1, 1)  // 1.1.0
    /// ```
    public init(_ major: Int, _ minor: Int, _ patch: Int = 0) {
        precondition(
            [major, minor, patch].allSatisfy { (0...Self.maximumPart).contains($0) },
            "schema version parts are 0...999999999, not \(major).\(minor).\(patch)")
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Parses `major.minor.patch`, each part at most 9 decimal digits without leading zeros (so
    /// one version has one text); nil for anything else (`"1.1"`, `"01.1.0"`, signs, spaces).
    ///
    /// ```swift
    /// #expect(SchemaVersion(text)?.minor == 1)  // text: "1.1.0"
    /// ```
    ///
    /// A bare literal argument, `SchemaVersion("1.1.0")`, calls ``init(stringLiteral:)`` instead.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ isCanonicalDecimal($0, maximumDigits: 9) }) else { return nil }
        self.init(Int(parts[0])!, Int(parts[1])!, Int(parts[2])!)
    }

    /// A version literal, as schemas declare theirs. A literal ``init(_:)`` refuses is a
    /// programming error and traps with the text.
    ///
    /// ```swift
    /// static let versionIdentifier: Schema.Version = "1.0.0"
    /// ```
    public init(stringLiteral value: String) {
        guard let version = SchemaVersion(value) else {
            preconditionFailure(
                "\"\(value)\" is not a schema version; write it as \"major.minor.patch\", e.g. \"1.0.0\"")
        }
        self = version
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
                in: container,
                debugDescription: "a schema version is \"major.minor.patch\", not \(text.prefix(40).debugDescription)")
        }
        self = version
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
