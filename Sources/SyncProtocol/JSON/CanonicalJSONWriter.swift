import Foundation

/// Writes the canonical JSON of the values a server stores per change, byte for byte what
/// ``ProtocolJSON/encode(_:)`` writes (Foundation's `JSONEncoder` with `.sortedKeys` and
/// `.withoutEscapingSlashes`): members sorted by the UTF-8 bytes of their keys, `"`, `\` and
/// control characters escaped as Foundation escapes them (`\b \f \n \r \t`, otherwise `\u00xx`),
/// everything else as is, and a double as its shortest `description` without a trailing `.0`.
/// It exists because going through `Encodable` costs more than the rest of storing a change.
///
/// ```swift
/// var writer = CanonicalJSONWriter()
/// try writer.write(["id": .text("r1")])
/// #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"id":{"text":"r1"}}"#)
/// ```
///
/// See `Protocol/README.md`, "Values", and <https://www.rfc-editor.org/rfc/rfc8259#section-7>.
public struct CanonicalJSONWriter: Sendable {
    /// Where the bytes go. Written through its pointer, never through `Array.append`: appending
    /// runs of bytes to an array went through the generic sequence copy, more than half of what
    /// writing a change cost.
    private var allocation: Allocation
    private var count = 0

    public init(capacity: Int = 256) {
        allocation = Allocation(capacity: max(capacity, 16))
    }

    /// The bytes written so far.
    public var bytes: [UInt8] { Array(UnsafeBufferPointer(start: allocation.pointer, count: count)) }

    /// How many bytes are written so far (``bytes`` would copy them to count them).
    public var byteCount: Int { count }

    /// Calls `body` with the bytes written so far, in place: valid only inside `body`.
    public func withUnsafeBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: allocation.pointer, count: count))
    }

    /// The bytes written so far, copied once (``bytes`` then `Data(_:)` copies them twice).
    public var data: Data { Data(bytes: allocation.pointer, count: count) }

    /// The bytes written so far as text (they are always valid UTF-8).
    public var text: String {
        String(decoding: UnsafeBufferPointer(start: allocation.pointer, count: count), as: UTF8.self)
    }

    /// Copies the allocation when a copy of this writer shares it, so writing never changes the
    /// copy's bytes. Every public `write` calls it first; ``reserve(_:)`` then grows a private one.
    @inline(__always)
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&allocation) { grow(to: count) }
    }

    /// The place to write `extra` more bytes, after growing the allocation if it must; the caller
    /// writes them there and adds them to `count`.
    @inline(__always)
    private mutating func reserve(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        if count + extra > allocation.capacity { grow(to: count + extra) }
        return allocation.pointer + count
    }

    private mutating func grow(to needed: Int) {
        let larger = Allocation(capacity: max(needed, allocation.capacity * 2))
        larger.pointer.update(from: allocation.pointer, count: count)
        allocation = larger
    }

    @inline(__always)
    private mutating func append(_ byte: UInt8) {
        reserve(1).pointee = byte
        count += 1
    }

    @inline(__always)
    private mutating func append(_ source: UnsafeBufferPointer<UInt8>) {
        guard let base = source.baseAddress else { return }
        ByteWords.copy(base, to: reserve(source.count), count: source.count)
        count += source.count
    }

    @inline(__always)
    private mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { append($0) }
    }

    private mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            guard let base = utf8.baseAddress, let first = Self.firstToEscape(utf8) else {
                // Nothing to escape (most strings): a quote, the bytes, a quote.
                let target = reserve(utf8.count + 2)
                target.pointee = UInt8(ascii: "\"")
                if let base = utf8.baseAddress { ByteWords.copy(base, to: target + 1, count: utf8.count) }
                target[utf8.count + 1] = UInt8(ascii: "\"")
                count += utf8.count + 2
                return
            }
            append(UInt8(ascii: "\""))
            append(UnsafeBufferPointer(start: base, count: first))
            var pending = first
            for index in first..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                append(UnsafeBufferPointer(rebasing: utf8[pending..<index]))
                pending = index + 1
                escape(byte)
            }
            append(UnsafeBufferPointer(rebasing: utf8[pending...]))
            append(UInt8(ascii: "\""))
        }
    }

    /// Where the first byte JSON escapes is, eight bytes at a time; nil when there is none.
    @inline(__always)
    private static func firstToEscape(_ utf8: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = utf8.baseAddress else { return nil }
        var index = 0
        while index + 8 <= utf8.count {
            if let special = ByteWords.firstQuoteBackslashOrControl(ByteWords.load(base + index)) {
                return index + special
            }
            index += 8
        }
        while index < utf8.count {
            let byte = base[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
            index += 1
        }
        return nil
    }

    /// A quote, backslash or control character as Foundation escapes it.
    private mutating func escape(_ byte: UInt8) {
        append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): append(byte)
        case 0x08: append(UInt8(ascii: "b"))
        case 0x0C: append(UInt8(ascii: "f"))
        case 0x0A: append(UInt8(ascii: "n"))
        case 0x0D: append(UInt8(ascii: "r"))
        case 0x09: append(UInt8(ascii: "t"))
        default:
            raw("u00")
            append(Self.hexDigit(byte >> 4))
            append(Self.hexDigit(byte & 0x0F))
        }
    }

    /// Decimal digits written straight into the bytes (no `String` in between): from the last
    /// one, on the stack, then copied.
    private mutating func integer(_ value: Int64) {
        if (0..<10).contains(value) {
            append(UInt8(truncatingIfNeeded: value) &+ 48)
            return
        }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var position = 20
            repeat {
                position -= 1
                digits[position] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 48
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                position -= 1
                digits[position] = UInt8(ascii: "-")
            }
            append(UnsafeBufferPointer(rebasing: digits[position...]))
        }
    }

    /// Below this, a whole double's `description` is its integer's digits and `.0` (from 2^53 on
    /// Swift writes an exponent), so it is written as the integer.
    private static let wholeRealLimit = 9_007_199_254_740_992.0

    /// A finite double as Foundation writes it: `description`, less a trailing `.0` (`1`, `-0`,
    /// `1e-05`, `1e+20`).
    private mutating func real(_ value: Double) {
        if value != 0, value.magnitude < Self.wholeRealLimit, value.rounded(.towardZero) == value {
            integer(Int64(value))
            return
        }
        let text = value.description
        let utf8 = text.utf8
        if utf8.count > 2, text.hasSuffix(".0") {
            for byte in utf8.dropLast(2) { append(byte) }
        } else {
            for byte in utf8 { append(byte) }
        }
    }

    private mutating func siteID(_ site: SiteID) {
        let start = reserve(34)
        start.pointee = UInt8(ascii: "\"")
        site.bytes.withUnsafeBytes { bytes in
            for (index, byte) in bytes.enumerated() {
                start[1 + 2 * index] = Self.hexDigit(byte >> 4)
                start[2 + 2 * index] = Self.hexDigit(byte & 0x0F)
            }
        }
        start[33] = UInt8(ascii: "\"")
        count += 34
    }

    @inline(__always)
    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? nibble &+ 48 : nibble &+ 87
    }

    /// Throws `EncodingError.invalidValue` for NaN, which has no encoding (as ``WireValue``'s
    /// `encode(to:)` does).
    public mutating func write(_ value: WireValue) throws {
        makeUnique()
        switch value {
        case .null: raw(#"{"null":true}"#)
        case .integer(let integer):
            raw(#"{"integer":""#)
            self.integer(integer)
            raw(#""}"#)
        case .real(let real) where real.isInfinite:
            raw(real > 0 ? #"{"real":"Infinity"}"# : #"{"real":"-Infinity"}"#)
        case .real(let real):
            guard !real.isNaN else {
                throw EncodingError.invalidValue(
                    real, EncodingError.Context(codingPath: [], debugDescription: "NaN has no encoding"))
            }
            raw(#"{"real":"#)
            self.real(real)
            raw("}")
        case .text(let text):
            raw(#"{"text":"#)
            string(text)
            raw("}")
        case .blob(let data):
            // Base64 uses no character JSON escapes (and slashes are written unescaped).
            raw(#"{"blob":""#)
            for byte in data.base64EncodedString().utf8 { append(byte) }
            raw(#""}"#)
        }
    }

    /// A row's key or columns: an object whose members are sorted by the UTF-8 bytes of their names.
    public mutating func write(_ values: [String: WireValue]) throws {
        makeUnique()
        append(UInt8(ascii: "{"))
        switch values.count {
        case 0: break
        case 1:
            let (name, value) = values.first!
            try member(name, value)
        case ...Self.membersSortedInPlace:
            // The members' places sorted on the stack, by the first eight bytes of each name and
            // only on a tie by the whole name: `sorted()` of the pairs cost a third of writing a change.
            try withUnsafeTemporaryAllocation(of: SortedMember.self, capacity: values.count) { members in
                var sortedCount = 0
                defer { members.baseAddress!.deinitialize(count: sortedCount) }
                for index in values.indices {
                    (members.baseAddress! + sortedCount).initialize(
                        to: SortedMember(index: index, prefix: Self.prefix(values.keys[index])))
                    var place = sortedCount
                    while place > 0, members[place].precedes(members[place - 1], in: values) {
                        members.swapAt(place, place - 1)
                        place -= 1
                    }
                    sortedCount += 1
                }
                for position in 0..<sortedCount {
                    if position > 0 { append(UInt8(ascii: ",")) }
                    let (name, value) = values[members[position].index]
                    try member(name, value)
                }
            }
        default:
            for (position, (name, value)) in values.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
                .enumerated()
            {
                if position > 0 { append(UInt8(ascii: ",")) }
                try member(name, value)
            }
        }
        append(UInt8(ascii: "}"))
    }

    /// Up to this many members are sorted on the stack; more (rare: a key has at most 16 columns,
    /// a change 64) take `sorted()`.
    private static let membersSortedInPlace = 64

    private mutating func member(_ name: String, _ value: WireValue) throws {
        string(name)
        append(UInt8(ascii: ":"))
        try write(value)
    }

    /// A member's place in its dictionary and the first eight bytes of its name, big-endian,
    /// zero-padded: comparing two prefixes compares the names' first eight bytes.
    private struct SortedMember {
        let index: Dictionary<String, WireValue>.Index
        let prefix: UInt64

        func precedes(_ other: SortedMember, in values: [String: WireValue]) -> Bool {
            if prefix != other.prefix { return prefix < other.prefix }
            return values.keys[index].utf8.lexicographicallyPrecedes(values.keys[other.index].utf8)
        }
    }

    private static func prefix(_ name: String) -> UInt64 {
        var name = name
        return name.withUTF8 { utf8 in
            guard let base = utf8.baseAddress else { return 0 }
            if utf8.count >= 8 { return ByteWords.load(base).byteSwapped }
            var prefix: UInt64 = 0
            for index in 0..<utf8.count { prefix |= UInt64(base[index]) << (56 - 8 * UInt64(index)) }
            return prefix
        }
    }

    /// A change, its members in sorted order: clock, columns, key, op, seq, site, table.
    public mutating func write(_ change: Change) throws {
        makeUnique()
        try writeChange(
            clock: change.clock, columns: { writer in try writer.write(change.columns) },
            key: { writer in try writer.write(change.key) }, op: change.op, seq: change.seq, site: change.site,
            table: change.table)
    }

    /// A change whose key and columns the caller writes itself, as lists it already holds in
    /// canonical order (a client's queue keeps them so: making two dictionaries per change only
    /// for this writer to sort them again cost a client more than writing the change): `columns`
    /// and `key` each write one object, with ``writeMembers(count:_:)``. The rest is what
    /// ``write(_:)-(Change)`` writes.
    public mutating func writeChange(
        clock: ChangeClock, columns: (inout CanonicalJSONWriter) throws -> Void,
        key: (inout CanonicalJSONWriter) throws -> Void, op: Change.Operation, seq: Int64, site: SiteID,
        table: String
    ) throws {
        makeUnique()
        raw(#"{"clock":""#)
        integer(clock.milliseconds)
        append(UInt8(ascii: "-"))
        integer(clock.counter)
        raw(#"","columns":"#)
        try columns(&self)
        raw(#","key":"#)
        try key(&self)
        switch op {
        case .insert: raw(#","op":"insert""#)
        case .update: raw(#","op":"update""#)
        case .delete: raw(#","op":"delete""#)
        }
        raw(#","seq":"#)
        integer(seq)
        raw(#","site":"#)
        siteID(site)
        raw(#","table":"#)
        string(table)
        append(UInt8(ascii: "}"))
    }

    /// An object of `count` members in the order `member` gives them (`member(index)` is the
    /// `index`th): the bytes ``write(_:)-([String:WireValue])`` writes for a dictionary of them
    /// only when they come sorted by the UTF-8 bytes of their names, no name twice, which the
    /// caller guarantees.
    public mutating func writeMembers(count: Int, _ member: (Int) throws -> (name: String, value: WireValue))
        throws
    {
        makeUnique()
        append(UInt8(ascii: "{"))
        for index in 0..<count {
            if index > 0 { append(UInt8(ascii: ",")) }
            let (name, value) = try member(index)
            try self.member(name, value)
        }
        append(UInt8(ascii: "}"))
    }

    /// A pull page, its members in sorted order: changes, cursor, hasMore, phase, remaining,
    /// removed (when set; each row's members `key`, `table`).
    public mutating func write(_ response: PullResponse) throws {
        makeUnique()
        try openWith(response.changes)
        raw(#","cursor":"#)
        string(response.cursor)
        raw(response.hasMore ? #","hasMore":true,"phase":"# : #","hasMore":false,"phase":"#)
        string(response.phase.rawValue)
        raw(#","remaining":"#)
        integer(response.remaining)
        if let removed = response.removed {
            raw(#","removed":["#)
            for (index, row) in removed.enumerated() {
                raw(index == 0 ? #"{"key":"# : #",{"key":"#)
                try write(row.key)
                raw(#","table":"#)
                string(row.table)
                append(UInt8(ascii: "}"))
            }
            append(UInt8(ascii: "]"))
        }
        append(UInt8(ascii: "}"))
    }

    /// A push, its members in sorted order: after (when set), changes, protocolVersion,
    /// schemaVersion, site. A client writes its pushes with it: through `Encodable`, encoding a push
    /// cost a client more than reading its changes from the log.
    public mutating func write(_ request: PushRequest) throws {
        try writePush(
            protocolVersion: request.protocolVersion, schemaVersion: request.schemaVersion, site: request.site,
            after: request.after, changeCount: request.changes.count
        ) { writer, index in try writer.write(request.changes[index]) }
    }

    /// A push whose changes the caller writes, `change(&writer, index)` the `index`th (with
    /// ``writeChange(clock:columns:key:op:seq:site:table:)``): the bytes ``write(_:)-(PushRequest)``
    /// writes for a request of those changes.
    public mutating func writePush(
        protocolVersion: Int, schemaVersion: SchemaVersion, site: SiteID, after: Int64? = nil, changeCount: Int,
        change: (inout CanonicalJSONWriter, Int) throws -> Void
    ) throws {
        makeUnique()
        if let after {
            raw(#"{"after":"#)
            integer(after)
            raw(#","changes":["#)
        } else {
            raw(#"{"changes":["#)
        }
        for index in 0..<changeCount {
            if index > 0 { append(UInt8(ascii: ",")) }
            try change(&self, index)
        }
        append(UInt8(ascii: "]"))
        raw(#","protocolVersion":"#)
        integer(Int64(protocolVersion))
        raw(#","schemaVersion":"#)
        string(schemaVersion.description)
        raw(#","site":"#)
        siteID(site)
        append(UInt8(ascii: "}"))
    }

    /// `{"changes":[…]`, the first member of a pull page.
    private mutating func openWith(_ changes: [Change]) throws {
        raw(#"{"changes":["#)
        for (index, change) in changes.enumerated() {
            if index > 0 { append(UInt8(ascii: ",")) }
            try write(change)
        }
        append(UInt8(ascii: "]"))
    }
}

/// The bytes of one ``CanonicalJSONWriter``, freed with it.
///
/// `@unchecked Sendable`: a writer writes into its allocation only while it holds the one
/// reference to it (``CanonicalJSONWriter`` checks `isKnownUniquelyReferenced` before every write
/// and copies otherwise), so an allocation shared by copies of a writer is only ever read.
private final class Allocation: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<UInt8>
    let capacity: Int

    init(capacity: Int) {
        pointer = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    deinit { pointer.deallocate() }
}
