/// A hybrid logical clock reading: milliseconds of physical time and a logical counter, ordered
/// first by time, then by counter. It packs into one 64-bit integer (48 bits of milliseconds, good
/// until the year 10889, and 16 bits of counter), so SQLite stores and compares it as an INTEGER
/// and the order of the integers is the order of the clocks.
///
/// ```swift
/// let stamp = HybridTimestamp(milliseconds: 1_764_000_000_000, counter: 3)
/// #expect(HybridTimestamp(packed: stamp.packed) == stamp)
/// #expect(stamp.description == "1764000000000-3")
/// ```
///
/// See Kulkarni et al., "Logical Physical Clocks" (2014), for the algorithm.
public struct HybridTimestamp: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public static let maximumMilliseconds: Int64 = (1 << 48) - 1
    public static let maximumCounter: Int64 = (1 << 16) - 1
    public static let zero = HybridTimestamp(milliseconds: 0, counter: 0)

    public let milliseconds: Int64
    public let counter: Int64

    public init(milliseconds: Int64, counter: Int64) {
        precondition((0...Self.maximumMilliseconds).contains(milliseconds), "HLC milliseconds out of range")
        precondition((0...Self.maximumCounter).contains(counter), "HLC counter out of range")
        self.milliseconds = milliseconds
        self.counter = counter
    }

    /// The packed form; nil for a negative integer (not a clock).
    public init?(packed: Int64) {
        guard packed >= 0 else { return nil }
        self.init(milliseconds: packed >> 16, counter: packed & Self.maximumCounter)
    }

    /// Parses the text form `milliseconds-counter`; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let milliseconds = Int64(parts[0]), let counter = Int64(parts[1]),
            (0...Self.maximumMilliseconds).contains(milliseconds), (0...Self.maximumCounter).contains(counter)
        else { return nil }
        self.init(milliseconds: milliseconds, counter: counter)
    }

    public var packed: Int64 { milliseconds << 16 | counter }

    public var description: String { "\(milliseconds)-\(counter)" }

    public static func < (lhs: HybridTimestamp, rhs: HybridTimestamp) -> Bool { lhs.packed < rhs.packed }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let stamp = HybridTimestamp(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\"\(text)\" is not a hybrid clock reading (milliseconds-counter)")
        }
        self = stamp
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
