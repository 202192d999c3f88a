/// A semantic schema version: `major.minor.patch`.
///
/// Same major: peers sync; a higher minor adds tables and columns. A different major is a
/// breaking change that older peers must upgrade to.
///
/// ```swift
/// let version: Schema.Version = "1.1.0"
/// #expect(version > Schema.Version(1, 0, 0))
/// #expect(version.description == "1.1.0")
/// ```
extension Schema {
    public struct Version: Sendable, Hashable, Comparable, Codable, LosslessStringConvertible,
        ExpressibleByStringLiteral
    {
        public var major: Int
        public var minor: Int
        public var patch: Int

        public init(_ major: Int, _ minor: Int, _ patch: Int = 0) {
            precondition(major >= 0 && minor >= 0 && patch >= 0, "schema version parts must not be negative")
            self.major = major
            self.minor = minor
            self.patch = patch
        }

        /// Parses `"1"`, `"1.1"` or `"1.1.0"`; nil for anything else (signs, spaces, letters, empty parts).
        public init?(_ description: String) {
            let parts = description.split(separator: ".", omittingEmptySubsequences: false)
            guard (1...3).contains(parts.count) else { return nil }
            var numbers: [Int] = []
            for part in parts {
                guard !part.isEmpty, part.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(part) else {
                    return nil
                }
                numbers.append(number)
            }
            while numbers.count < 3 { numbers.append(0) }
            self.init(numbers[0], numbers[1], numbers[2])
        }

        /// A version literal; a malformed literal is a programming error and traps with the text.
        public init(stringLiteral value: String) {
            guard let version = Version(value) else {
                preconditionFailure("\"\(value)\" is not a schema version; write it as \"major.minor.patch\"")
            }
            self = version
        }

        public var description: String { "\(major).\(minor).\(patch)" }

        public static func < (lhs: Version, rhs: Version) -> Bool {
            (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let version = Version(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(text)\" is not a schema version (major.minor.patch)")
            }
            self = version
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }
}
