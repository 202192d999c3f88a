import Foundation

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

    /// Whether `count` bytes at `lhs` and at `rhs` are the same. Up to 16 bytes with two loads
    /// from each that may overlap (no loop, no call).
    @inline(__always)
    static func equal(_ lhs: UnsafePointer<UInt8>, _ rhs: UnsafePointer<UInt8>, count: Int) -> Bool {
        let left = UnsafeRawPointer(lhs)
        let right = UnsafeRawPointer(rhs)
        switch count {
        case 0: return true
        case 1...3:
            return lhs[0] == rhs[0] && lhs[count >> 1] == rhs[count >> 1] && lhs[count - 1] == rhs[count - 1]
        case 4...7:
            return left.loadUnaligned(as: UInt32.self) == right.loadUnaligned(as: UInt32.self)
                && left.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
                    == right.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
        case 8...16:
            return left.loadUnaligned(as: UInt64.self) == right.loadUnaligned(as: UInt64.self)
                && left.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
                    == right.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        default:
            return memcmp(lhs, rhs, count) == 0
        }
    }

    /// Copies `count` bytes from `source` to `target` (which do not overlap). Up to 16 bytes
    /// with two loads and two stores that may overlap (no loop, no call).
    @inline(__always)
    static func copy(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, count: Int) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(target)
        switch count {
        case 0: return
        case 1...3:
            target[0] = source[0]
            target[count >> 1] = source[count >> 1]
            target[count - 1] = source[count - 1]
        case 4...7:
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: count - 4, as: UInt32.self)
        case 8...16:
            let head = from.loadUnaligned(as: UInt64.self)
            let tail = from.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            to.storeBytes(of: head, as: UInt64.self)
            to.storeBytes(of: tail, toByteOffset: count - 8, as: UInt64.self)
        default:
            target.update(from: source, count: count)
        }
    }
}
