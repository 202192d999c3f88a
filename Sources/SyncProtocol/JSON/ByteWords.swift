/// Eight bytes at a time, for the JSON reader and writer's inner loops: the word tests of
/// <https://graphics.stanford.edu/~seander/bithacks.html> ("determine if a word has a zero byte",
/// "has a byte less than n"), exact as a yes or no, and short copies and comparisons without a
/// `memcpy` or `memcmp` call (a call cost more than the few bytes of a member name).
enum ByteWords {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// The eight bytes at `pointer`, in memory order from the low byte (any alignment).
    @inline(__always)
    static func load(_ pointer: UnsafePointer<UInt8>) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(pointer).loadUnaligned(as: UInt64.self))
    }

    /// Which of the eight bytes (0 for the one at the lowest address) is the first control
    /// character, quote or backslash (what a JSON string escapes, and what ends a run of plain
    /// bytes); nil when none is. Bytes of 0x80 and above never count. Each test flags its first
    /// match exactly (a borrow only runs upward from it), so the lowest flag is the first byte.
    @inline(__always)
    static func firstQuoteBackslashOrControl(_ word: UInt64) -> Int? {
        func hasZero(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let control = (word &- ones &* 0x20) & ~word & highs
        let flags = control | hasZero(word ^ (ones &* 0x22)) | hasZero(word ^ (ones &* 0x5C))
        return flags == 0 ? nil : flags.trailingZeroBitCount >> 3
    }

    /// Whether any of the eight bytes is 0x80 or above (not ASCII).
    @inline(__always)
    static func hasNonASCII(_ word: UInt64) -> Bool { word & highs != 0 }

    /// Whether `count` bytes at `lhs` and at `rhs` are the same.
    @inline(__always)
    static func equal(_ lhs: UnsafePointer<UInt8>, _ rhs: UnsafePointer<UInt8>, count: Int) -> Bool {
        var index = 0
        while index + 8 <= count {
            guard load(lhs + index) == load(rhs + index) else { return false }
            index += 8
        }
        while index < count {
            guard lhs[index] == rhs[index] else { return false }
            index += 1
        }
        return true
    }

    /// Copies `count` bytes from `source` to `target` (which do not overlap).
    @inline(__always)
    static func copy(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int) {
        guard count <= 32 else {
            target.update(from: source, count: count)
            return
        }
        var index = 0
        while index + 8 <= count {
            UnsafeMutableRawPointer(target + index).storeBytes(
                of: UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self), as: UInt64.self)
            index += 8
        }
        while index < count {
            target[index] = source[index]
            index += 1
        }
    }
}
