/// A hybrid logical clock reading on the wire: `"<milliseconds>-<counter>"`, both decimal, the
/// milliseconds since 1970 below 2^48 and the counter below 2^16. Clocks order by milliseconds,
/// then counter; equal clocks by site id.
///
/// ```swift
/// let clock = ChangeClock("1764000000000-3")!
/// #expect(ChangeClock(packed: clock.packed) == clock)
/// #expect(clock == ChangeClock(validMilliseconds: 1_764_000_000_000, counter: 3))
/// ```
///
/// The same type is the store's clock reading: SQLite stores it as the INTEGER ``packed``.
///
/// See Kulkarni et al., "Logical Physical Clocks" (2014).
public struct ChangeClock: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    public static let maximumMilliseconds: Int64 = (1 << 48) - 1
    public static let maximumCounter: Int64 = (1 << 16) - 1
    /// The earliest reading, `0-0`: the clock of a store that has issued none.
    public static let zero = ChangeClock(validMilliseconds: 0, counter: 0)

    public let milliseconds: Int64
    public let counter: Int64

    /// nil when a part is out of range.
    public init?(milliseconds: Int64, counter: Int64) {
        guard (0...Self.maximumMilliseconds).contains(milliseconds), (0...Self.maximumCounter).contains(counter)
        else { return nil }
        self.milliseconds = milliseconds
        self.counter = counter
    }

    /// A clock from parts the caller keeps in range, such as a hybrid logical clock clamping the
    /// wall clock; traps when a part is out of range (``init(milliseconds:counter:)`` checks instead).
    ///
    /// ```swift
    /// let next = ChangeClock(validMilliseconds: last.milliseconds, counter: last.counter + 1)
    /// ```
    public init(validMilliseconds milliseconds: Int64, counter: Int64) {
        guard let clock = ChangeClock(milliseconds: milliseconds, counter: counter) else {
            preconditionFailure("clock \(milliseconds)-\(counter) is out of range (below 2^48 and 2^16)")
        }
        self = clock
    }

    /// The clock packed into one integer, milliseconds << 16 | counter: as an unsigned 64-bit
    /// number its order is the clock order. Stored signed (as here, and in SQLite) it stays
    /// non-negative and ordered while the milliseconds are below 2^47 (the year 6429); beyond,
    /// ``packed`` is negative and this initialiser refuses it.
    public init?(packed: Int64) {
        guard packed >= 0 else { return nil }
        self.init(milliseconds: packed >> 16, counter: packed & Self.maximumCounter)
    }

    /// Parses the text form; nil for anything else (signs, spaces, leading `+`, empty parts,
    /// leading zeros: one clock has one text, like ``WireValue`` integers).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ isCanonicalDecimal($0, maximumDigits: 16) }),
            let milliseconds = Int64(parts[0]), let counter = Int64(parts[1])
        else { return nil }
        self.init(milliseconds: milliseconds, counter: counter)
    }

    /// The next reading after this one within its millisecond (Protocol/README.md, section 7.2):
    /// the counter plus one, or, when the counter is at 65535, the next millisecond with counter
    /// 0. The last reading of the range, `281474976710655-65535`, is its own successor.
    ///
    /// ```swift
    /// #expect(ChangeClock("10-65535")!.successor == ChangeClock("11-0")!)
    /// ```
    public var successor: ChangeClock {
        if counter < Self.maximumCounter { return ChangeClock(validMilliseconds: milliseconds, counter: counter + 1) }
        if milliseconds < Self.maximumMilliseconds {
            return ChangeClock(validMilliseconds: milliseconds + 1, counter: 0)
        }
        return self
    }

    /// See ``init(packed:)``; negative for milliseconds of 2^47 or more.
    public var packed: Int64 { Int64(bitPattern: UInt64(milliseconds) << 16 | UInt64(counter)) }
    public var description: String { "\(milliseconds)-\(counter)" }

    /// Milliseconds, then counter, over the whole range (comparing signed ``packed`` values would
    /// put every clock from 2^47 ms on before all others).
    public static func < (lhs: ChangeClock, rhs: ChangeClock) -> Bool {
        (lhs.milliseconds, lhs.counter) < (rhs.milliseconds, rhs.counter)
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let clock = ChangeClock(text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription:
                    "a clock is \"<milliseconds>-<counter>\" (below 2^48 and 2^16), not \(text.prefix(40).debugDescription)"
            )
        }
        self = clock
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Decimal digits without a leading zero (except `0` itself), at most `maximumDigits` of them.
func isCanonicalDecimal(_ text: Substring, maximumDigits: Int) -> Bool {
    let digits = text.utf8
    guard let first = digits.first, digits.count <= maximumDigits, digits.allSatisfy({ (48...57).contains($0) })
    else { return false }
    return first != UInt8(ascii: "0") || digits.count == 1
}
