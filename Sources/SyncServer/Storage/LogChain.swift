import Foundation

/// A fingerprint of a dataset's log up to and including one entry: each entry's is made from the
/// fingerprint of the entry before it and from its own canonical JSON, so two logs give one serial
/// the same fingerprint only when they hold the same entries up to it.
///
/// A pull cursor carries the fingerprint of the entry it stopped at (``PullCursor/mark``), and a
/// cursor whose entry now has another fingerprint is refused (`invalid_cursor`; the device then
/// downloads the dataset again). That is what catches storage put back from a copy by hand (a file
/// copy of the data directory with its `-served` file, a `pg_restore` without `ostore-server
/// restore`) once new pushes have numbered their changes past the serials a device had read:
/// neither the dataset's incarnation nor its newest serial tells that log from the one the cursor
/// was issued by, and the device would skip the changes the new log numbered there.
///
/// A fast 64-bit mix of 8-byte little-endian words. Each fingerprint is computed once, when its
/// entry is stored, from the stored one before it, and afterwards only compared: another release or
/// platform computing it otherwise would chain on just as well. It tells histories apart; it is not
/// made to resist bodies crafted to collide, which only the server's own clients could push, and
/// which could at worst make the server accept a cursor it should refuse, as it did before
/// fingerprints existed.
///
/// ```swift
/// var chain: Int64? = try previousChain()
/// for body in bodies { chain = LogChain.next(after: chain, body: body) }
/// ```
enum LogChain {
    /// The fingerprint of an entry with canonical JSON `body` after the entry fingerprinted
    /// `previous` (nil for the first entry of a log, or after an entry stored before fingerprints).
    static func next(after previous: Int64?, body: String) -> Int64 {
        var body = body
        // A log's first entry starts from a state of its own, not from any previous fingerprint's.
        let start = previous.map { round(UInt64(bitPattern: $0), 1) } ?? round(0x6A09_E667_F3BC_C908, 2)
        let hash = body.withUTF8 { bytes -> UInt64 in
            var hash = round(start, UInt64(bytes.count))
            var offset = 0
            let base = UnsafeRawPointer(bytes.baseAddress)
            while offset + 8 <= bytes.count {
                hash = round(hash, UInt64(littleEndian: base!.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
                offset += 8
            }
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset)) }
            return finish(round(hash, tail))
        }
        return Int64(bitPattern: hash)
    }

    private static func round(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        let mixed = hash ^ (word &* 0x9E37_79B9_7F4A_7C15)
        return ((mixed << 31) | (mixed >> 33)) &* 0xC2B2_AE3D_27D4_EB4F
    }

    /// MurmurHash3's 64-bit finalizer: every bit of the input moves about half the output's.
    private static func finish(_ hash: UInt64) -> UInt64 {
        var hash = hash
        hash ^= hash >> 33
        hash &*= 0xFF51_AFD7_ED55_8CCD
        hash ^= hash >> 33
        hash &*= 0xC4CE_B9FE_1A85_EC53
        hash ^= hash >> 33
        return hash
    }
}
