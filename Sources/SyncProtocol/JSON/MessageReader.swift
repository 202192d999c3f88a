import Foundation

/// Reads a push body (and, for clients, a pull page: ``readPullPage(_:)``) in one pass, building
/// the message as it goes, for the bodies peers actually send. For a push it accepts only a
/// subset of what ``ProtocolJSON/decode(_:from:limits:)`` accepts (and reads it to the same
/// values): on anything outside that subset — any syntax error, a repeated or escaped member
/// name, an unknown member, a `null`, a number that is not a plain integer where an integer
/// belongs, a value the strict reader would refuse — it gives up and returns nil, and the caller
/// runs the strict reader, which produces the error (or the value). So every refusal keeps
/// exactly the code and message it had; only accepted bodies get faster.
///
/// Why it pays: validating the body with ``StrictJSON``, then decoding it through `Decodable`
/// built every string twice and boxed every value, more than storing the change cost.
package struct MessageReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0
    /// Pull pages are read as `JSONDecoder` reads them, which passes over members it does not
    /// know (a newer server's); a push is refused on them, as the strict reader refuses them.
    private let skipsUnknownMembers: Bool
    /// Deepest nesting ``skipValue(depth:)`` follows into a member this reader does not know.
    private static let maximumSkippedDepth = 32
    /// Strings made for names (and tables) seen before in this body, found by their bytes: a page
    /// repeats a handful of names thousands of times, and making a `String` of each was a fifth of
    /// reading a change.
    private var interned: [(name: Name, string: String)] = []
    /// Most names a body repeats; names beyond are made each time.
    private static let maximumInterned = 32
    /// The last text value longer than a small string, reused when the next has the same bytes
    /// (an insert carries its key's text twice: in `columns` and in `key`).
    private var lastText: (name: Name, string: String)?
    /// The last site read and where its digits are: every change of a push has the push's site.
    private var lastSite: (position: Int, site: SiteID, isLowercase: Bool)?
    /// How many members the last key and the last columns had: the next dictionary is made with
    /// room for as many, so it is not regrown while it fills.
    private var lastKeyCount = 1
    private var lastColumnsCount = 4
    /// Whether the change being read is, so far, written exactly as ``CanonicalJSONWriter`` writes
    /// it (see ``CanonicalText``): anything the writer would write otherwise clears it.
    private var isCanonical = true
    /// Each change's ``CanonicalText`` as the push is read, nil for one not written canonically
    /// (kept for a push only: a server keeps the text, a client applies the values).
    private var texts: [CanonicalText?] = []
    private let keepsTexts: Bool

    /// Where a pushed change's canonical JSON, and its key's, lie in the body it was read from:
    /// set only when the bytes are exactly what ``CanonicalJSONWriter`` writes for the change this
    /// reader made of them (`write(_:)` of the change, and of its key), so a server can keep them
    /// without writing them again. That holds when, throughout the change: no whitespace; the
    /// members in the writer's order (`clock, columns, key, op, seq, site, table`, `columns` too
    /// when empty) and a key's or columns' names in strictly increasing byte order; no escape in
    /// any string (the writer escapes only `"`, `\` and control characters, which a string
    /// without escapes cannot hold); the site in lower-case hex; and each real an integer of at
    /// most 15 digits other than zero, which the writer writes as those digits. Numbers and clocks
    /// this reader accepts are already in the writer's form (no sign but `-`, no leading zero).
    package struct CanonicalText: Sendable, Hashable {
        package let change: Range<Int>
        package let key: Range<Int>
    }

    /// The push, or nil when the body is not one this reader vouches for; with each change's
    /// ``CanonicalText`` (one per change, in order).
    static func read(_ data: Data, limits: Limits) -> (push: PushRequest, texts: [CanonicalText?])? {
        // The deepest a push nests is five (body, changes, change, columns, value); a lower limit
        // makes the strict reader's depth check decide.
        guard limits.maxNestingDepth >= 5 else { return nil }
        return data.withUnsafeBytes { raw in
            var reader = MessageReader(
                bytes: raw.bindMemory(to: UInt8.self), skipsUnknownMembers: false, keepsTexts: true)
            guard let push = reader.push() else { return nil }
            return (push, reader.texts)
        }
    }

    /// A row's key or columns (`{"id":{"text":"r1"}}`), or nil when this reader would not vouch
    /// for the text.
    static func readValues(_ data: Data) -> [String: WireValue]? {
        data.withUnsafeBytes { raw in
            var reader = MessageReader(bytes: raw.bindMemory(to: UInt8.self), skipsUnknownMembers: false)
            guard let values = reader.values() else { return nil }
            reader.skipWhitespace()
            return reader.offset == reader.bytes.count ? values : nil
        }
    }

    /// A pull page read to the values `JSONDecoder` gives, or nil when this reader does not vouch
    /// for the text (a syntax error, a repeated member, a `null` where a value belongs, a number
    /// that is not a plain integer where an integer belongs, a value the protocol refuses): the
    /// caller then decodes with ``ProtocolJSON/decode(_:from:limits:)``, which produces the error
    /// (a repeated member among them, which `JSONDecoder` alone would take) or the value.
    ///
    /// Why it pays: decoding a page through `JSONDecoder` costs more than applying it (a boxed
    /// container per value, two for each tagged value).
    ///
    /// ```swift
    /// let page = try MessageReader.readPullPage(body) ?? ProtocolJSON.decode(PullResponse.self, from: body, limits: .standard)
    /// ```
    package static func readPullPage(_ data: Data) -> PullResponse? {
        data.withUnsafeBytes { raw in
            var reader = MessageReader(bytes: raw.bindMemory(to: UInt8.self), skipsUnknownMembers: true)
            return reader.pullPage()
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, skipsUnknownMembers: Bool, keepsTexts: Bool = false) {
        self.bytes = bytes
        self.skipsUnknownMembers = skipsUnknownMembers
        self.keepsTexts = keepsTexts
    }

    private mutating func push() -> PushRequest? {
        var protocolVersion: Int?
        var schemaVersion: SchemaVersion?
        var site: SiteID?
        var changes: [Change]?
        var after: Int64?
        let complete = object { reader, name in
            if reader.matches(name, "after"), after == nil {
                after = reader.integer()
                return after != nil
            } else if reader.matches(name, "protocolVersion"), protocolVersion == nil {
                protocolVersion = reader.integer().flatMap { Int(exactly: $0) }
                return protocolVersion != nil
            } else if reader.matches(name, "schemaVersion"), schemaVersion == nil {
                schemaVersion = reader.string().flatMap(SchemaVersion.init)
                return schemaVersion != nil
            } else if reader.matches(name, "site"), site == nil {
                site = reader.siteID()
                return site != nil
            } else if reader.matches(name, "changes"), changes == nil {
                changes = reader.changes()
                return changes != nil
            }
            return false
        }
        skipWhitespace()
        guard complete, offset == bytes.count, let protocolVersion, let schemaVersion, let site, let changes else {
            return nil
        }
        return PushRequest(
            protocolVersion: protocolVersion, schemaVersion: schemaVersion, site: site, changes: changes, after: after)
    }

    private mutating func pullPage() -> PullResponse? {
        var changes: [Change]?
        var cursor: String?
        var hasMore: Bool?
        var phase: PullResponse.Phase?
        var remaining: Int64?
        var removed: [RemovedRow]?
        let complete = object { reader, name in
            if reader.matches(name, "changes") {
                guard changes == nil else { return false }
                changes = reader.changes()
                return changes != nil
            } else if reader.matches(name, "cursor") {
                guard cursor == nil else { return false }
                cursor = reader.string()
                return cursor != nil
            } else if reader.matches(name, "hasMore") {
                guard hasMore == nil else { return false }
                hasMore = reader.bool()
                return hasMore != nil
            } else if reader.matches(name, "phase") {
                guard phase == nil else { return false }
                phase = reader.string().flatMap(PullResponse.Phase.init(rawValue:))
                return phase != nil
            } else if reader.matches(name, "remaining") {
                guard remaining == nil else { return false }
                remaining = reader.integer()
                return remaining != nil
            } else if reader.matches(name, "removed") {
                guard removed == nil else { return false }
                removed = reader.removedRows()
                return removed != nil
            }
            return reader.skipUnknownMember()
        }
        skipWhitespace()
        guard complete, offset == bytes.count, let changes, let cursor, let hasMore, let phase, let remaining else {
            return nil
        }
        return PullResponse(
            changes: changes, cursor: cursor, hasMore: hasMore, phase: phase, remaining: remaining, removed: removed)
    }

    /// A pull page's `removed`: rows by table and key, each member once.
    private mutating func removedRows() -> [RemovedRow]? {
        skipWhitespace()
        guard take(UInt8(ascii: "[")) else { return nil }
        var rows: [RemovedRow] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) { return rows }
        while true {
            var table: String?
            var key: [String: WireValue]?
            let complete = object { reader, name in
                if reader.matches(name, "table") {
                    guard table == nil else { return false }
                    table = reader.internedString()
                    return table != nil
                } else if reader.matches(name, "key") {
                    guard key == nil else { return false }
                    key = reader.values()
                    return key != nil
                }
                return reader.skipUnknownMember()
            }
            guard complete, let table, let key else { return nil }
            rows.append(RemovedRow(table: table, key: key))
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return rows }
            guard take(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func changes() -> [Change]? {
        skipWhitespace()
        guard take(UInt8(ascii: "[")) else { return nil }
        var changes: [Change] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) { return changes }
        while true {
            skipWhitespace()
            let start = offset
            isCanonical = true
            guard let (read, key) = change() else { return nil }
            changes.append(read)
            if keepsTexts { texts.append(isCanonical ? CanonicalText(change: start..<offset, key: key) : nil) }
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return changes }
            guard take(UInt8(ascii: ",")) else { return nil }
        }
    }

    /// A change, and where its key lies in the body.
    private mutating func change() -> (Change, key: Range<Int>)? {
        var table: String?
        var key: [String: WireValue]?
        var op: Change.Operation?
        var columns: [String: WireValue]?
        var clock: ChangeClock?
        var site: SiteID?
        var seq: Int64?
        var keyStart = 0
        var keyEnd = 0
        // The writer's place of the next member (clock, columns, key, op, seq, site, table).
        var nextMember = 0
        // Members by the first byte of their name (then the whole name): each name is compared
        // with one or two known ones, never all seven.
        let complete = object { reader, name in
            switch name.count > 0 ? reader.bytes[name.start] : 0 {
            case UInt8(ascii: "c") where reader.matches(name, "columns"):
                guard columns == nil else { return false }
                reader.member(1, next: &nextMember)
                columns = reader.values(expecting: reader.lastColumnsCount)
                reader.lastColumnsCount = columns?.count ?? reader.lastColumnsCount
                return columns != nil
            case UInt8(ascii: "c") where reader.matches(name, "clock"):
                guard clock == nil else { return false }
                reader.member(0, next: &nextMember)
                clock = reader.clock()
                return clock != nil
            case UInt8(ascii: "k") where reader.matches(name, "key"):
                guard key == nil else { return false }
                reader.member(2, next: &nextMember)
                keyStart = reader.offset
                key = reader.values(expecting: reader.lastKeyCount)
                keyEnd = reader.offset
                reader.lastKeyCount = key?.count ?? reader.lastKeyCount
                return key != nil
            case UInt8(ascii: "o") where reader.matches(name, "op"):
                guard op == nil else { return false }
                reader.member(3, next: &nextMember)
                op = reader.operation()
                return op != nil
            case UInt8(ascii: "s") where reader.matches(name, "seq"):
                guard seq == nil else { return false }
                reader.member(4, next: &nextMember)
                seq = reader.integer()
                return seq != nil
            case UInt8(ascii: "s") where reader.matches(name, "site"):
                guard site == nil else { return false }
                reader.member(5, next: &nextMember)
                site = reader.siteID()
                return site != nil
            case UInt8(ascii: "t") where reader.matches(name, "table"):
                guard table == nil else { return false }
                reader.member(6, next: &nextMember)
                table = reader.internedString()
                return table != nil
            default:
                return reader.skipUnknownMember()
            }
        }
        guard complete, let table, let key, let op, let clock, let site, let seq else { return nil }
        if nextMember != 7 { isCanonical = false }
        return (
            Change(table: table, key: key, op: op, columns: columns ?? [:], clock: clock, site: site, seq: seq),
            keyStart..<keyEnd
        )
    }

    /// A change's member met: canonical only in the writer's place, `place`, right after the last.
    @inline(__always)
    private mutating func member(_ place: Int, next: inout Int) {
        if place != next { isCanonical = false }
        next = place + 1
    }

    /// A key or the columns: names (plain, no escapes) to values, none repeated. Names are compared
    /// as Swift strings, as ``StrictJSON`` compares them, so canonically equivalent names count as
    /// repeated. `expected`: how many members to make room for.
    private mutating func values(expecting expected: Int = 1) -> [String: WireValue]? {
        // Made for as many members as the last one had: growing a dictionary while it fills cost
        // more than making it (and `reserveCapacity` more than either).
        var values = [String: WireValue](minimumCapacity: expected)
        var previous: Name?
        let complete = object { reader, name in
            // The writer sorts the names by their bytes.
            if reader.keepsTexts, reader.isCanonical, let previous, !reader.precedes(previous, name) {
                reader.isCanonical = false
            }
            previous = name
            guard let value = reader.value() else { return false }
            return values.updateValue(value, forKey: reader.interned(name)) == nil
        }
        return complete ? values : nil
    }

    /// Whether `lhs`'s bytes come strictly before `rhs`'s.
    private func precedes(_ lhs: Name, _ rhs: Name) -> Bool {
        UnsafeBufferPointer(start: bytes.baseAddress! + lhs.start, count: lhs.count).lexicographicallyPrecedes(
            UnsafeBufferPointer(start: bytes.baseAddress! + rhs.start, count: rhs.count))
    }

    /// A tagged value with exactly one member, read as ``WireValue``'s `init(from:)` reads it.
    private mutating func value() -> WireValue? {
        var value: WireValue?
        let complete = object { reader, tag in
            guard value == nil else { return false }
            if reader.matches(tag, "text") {
                value = reader.text().map(WireValue.text)
            } else if reader.matches(tag, "integer") {
                value = reader.integerString().map(WireValue.integer)
            } else if reader.matches(tag, "real") {
                let start = reader.offset
                value = reader.real().map(WireValue.real)
                if reader.keepsTexts, reader.isCanonical {
                    reader.isCanonical = reader.isCanonicalReal(start..<reader.offset)
                }
            } else if reader.matches(tag, "null") {
                guard reader.literal("true") else { return false }
                value = .null
            } else if reader.matches(tag, "blob") {
                // Only the text the bytes encode back to, as the strict reader demands.
                let start = reader.offset
                guard let text = reader.string(), let data = Data(base64Encoded: text),
                    data.base64EncodedString() == text
                else { return false }
                // Written with an escape (`\/`), it is not the writer's text.
                if reader.offset - start != text.utf8.count + 2 { reader.isCanonical = false }
                value = .blob(data)
            } else {
                return false
            }
            return value != nil
        }
        return complete ? value : nil
    }

    /// `{ "name": value, … }`: `member` reads each value (the reader is at it) and returns false
    /// to give up. Returns whether the object was read to its closing brace.
    private mutating func object(_ member: (inout MessageReader, Name) -> Bool) -> Bool {
        skipWhitespace()
        guard take(UInt8(ascii: "{")) else { return false }
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard let name = plainString() else { return false }
            skipWhitespace()
            guard take(UInt8(ascii: ":")), member(&self, name) else { return false }
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return true }
            guard take(UInt8(ascii: ",")) else { return false }
        }
    }

    /// Where a string without escapes lies in the body: `count` bytes from `start`, valid UTF-8.
    private struct Name {
        let start: Int
        let count: Int
    }

    /// Whether the name's bytes are `known`'s (ASCII names only: no other string is canonically
    /// equivalent to one of them, so this is what comparing them as Swift strings answers).
    @inline(__always)
    private func matches(_ name: Name, _ known: StaticString) -> Bool {
        name.count == known.utf8CodeUnitCount
            && known.withUTF8Buffer {
                ByteWords.equal(bytes.baseAddress! + name.start, $0.baseAddress!, count: name.count)
            }
    }

    private func sameBytes(_ lhs: Name, _ rhs: Name) -> Bool {
        lhs.count == rhs.count
            && ByteWords.equal(bytes.baseAddress! + lhs.start, bytes.baseAddress! + rhs.start, count: lhs.count)
    }

    private func makeString(_ name: Name) -> String {
        String(decoding: UnsafeBufferPointer(start: bytes.baseAddress! + name.start, count: name.count), as: UTF8.self)
    }

    /// The string of `name`, made once per body for each distinct name.
    private mutating func interned(_ name: Name) -> String {
        for index in interned.indices where sameBytes(interned[index].name, name) {
            return interned[index].string
        }
        let string = makeString(name)
        if interned.count < Self.maximumInterned { interned.append((name, string)) }
        return string
    }

    /// A string that repeats from change to change (a table's name): interned when it has no
    /// escapes, else read by ``string(allowingEscapes:)``.
    private mutating func internedString() -> String? {
        let start = offset
        if let name = plainString() { return interned(name) }
        offset = start
        isCanonical = false
        return string()
    }

    /// A text value; the one before is reused when the bytes are the same.
    private mutating func text() -> String? {
        let start = offset
        guard let name = plainString() else {
            offset = start
            isCanonical = false
            return string()
        }
        if let lastText, sameBytes(lastText.name, name) { return lastText.string }
        let string = makeString(name)
        // Up to 15 bytes a string is held inline: nothing to share.
        if name.count > 15 { lastText = (name, string) }
        return string
    }

    /// An operation, matched on the bytes when written without escapes.
    private mutating func operation() -> Change.Operation? {
        let start = offset
        guard let name = plainString() else {
            offset = start
            isCanonical = false
            return string().flatMap(Change.Operation.init(rawValue:))
        }
        if matches(name, "insert") { return .insert }
        if matches(name, "update") { return .update }
        if matches(name, "delete") { return .delete }
        return nil
    }

    /// A string without escapes (and no unescaped control character, valid UTF-8), as where it
    /// lies; nil for anything else (the caller resets `offset` when it reads on).
    private mutating func plainString() -> Name? {
        skipWhitespace()
        guard take(UInt8(ascii: "\"")) else { return nil }
        let base = bytes.baseAddress!
        let start = offset
        var position = offset
        // Eight bytes at a time up to the first byte that ends the string or has to be looked at.
        var words: UInt64 = 0
        while position + 8 <= bytes.count {
            let word = ByteWords.load(base + position)
            guard let special = ByteWords.firstQuoteBackslashOrControl(word) else {
                words |= word
                position += 8
                continue
            }
            words |= word & ((1 << (8 * UInt64(special))) &- 1)
            position += special
            break
        }
        var union: UInt8 = ByteWords.hasNonASCII(words) ? 0x80 : 0
        while position < bytes.count {
            let byte = base[position]
            if byte == UInt8(ascii: "\"") {
                offset = position + 1
                let name = Name(start: start, count: position - start)
                // ASCII needs no validation (and most names and values are ASCII).
                guard
                    union < 0x80
                        || String(
                            validating: UnsafeBufferPointer(start: base + start, count: name.count), as: UTF8.self)
                            != nil
                else { return nil }
                return name
            }
            guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
            union |= byte
            position += 1
        }
        return nil
    }

    /// A string, its escapes undone as ``StrictJSON`` undoes them; nil for anything else, an
    /// unescaped control character, invalid UTF-8 or a surrogate escape that is not a pair.
    private mutating func string(allowingEscapes: Bool = true) -> String? {
        skipWhitespace()
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = offset
        var union: UInt8 = 0
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeBufferPointer(rebasing: bytes[start..<offset])
                offset += 1
                // ASCII needs no validation (and most names and values are ASCII).
                return union < 0x80
                    ? String(decoding: content, as: UTF8.self) : String(validating: content, as: UTF8.self)
            }
            union |= byte
            if byte == UInt8(ascii: "\\") {
                guard allowingEscapes else { return nil }
                return escapedString(from: start)
            }
            guard byte >= 0x20 else { return nil }
            offset += 1
        }
        return nil
    }

    /// The rest of a string that holds an escape; `offset` is at the first backslash.
    private mutating func escapedString(from start: Int) -> String? {
        var content = Array(bytes[start..<offset])
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: content, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard offset < bytes.count else { return nil }
                let escape = bytes[offset]
                offset += 1
                switch (escape, StrictJSON.unescaped(escape)) {
                case (_, let plain?): content.append(plain)
                case (UInt8(ascii: "u"), nil):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(),
                            (0xDC00...0xDFFF).contains(low)
                        else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let character = Unicode.Scalar(scalar) else { return nil }
                    content.append(contentsOf: String(character).utf8)
                default: return nil
                }
            case 0..<0x20:
                return nil
            default:
                content.append(byte)
            }
        }
        return nil
    }

    private mutating func hex4() -> UInt32? {
        guard offset + 4 <= bytes.count else { return nil }
        var scalar: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = SiteID.nibble(bytes[offset]) else { return nil }
            scalar = scalar << 4 | UInt32(digit)
            offset += 1
        }
        return scalar
    }

    /// A clock as ``ChangeClock``'s `init?(_:)` reads it (`"<milliseconds>-<counter>"`, canonical
    /// decimals of at most 16 digits, in range), read from the bytes without making a string.
    private mutating func clock() -> ChangeClock? {
        skipWhitespace()
        guard take(UInt8(ascii: "\"")) else { return nil }
        guard let milliseconds = canonicalDecimal(), take(UInt8(ascii: "-")), let counter = canonicalDecimal(),
            take(UInt8(ascii: "\""))
        else { return nil }
        return ChangeClock(milliseconds: milliseconds, counter: counter)
    }

    /// 1 to 16 decimal digits without a leading zero (except `0` itself).
    private mutating func canonicalDecimal() -> Int64? {
        let start = offset
        var value: Int64 = 0
        while offset < bytes.count, (48...57).contains(bytes[offset]), offset - start < 16 {
            value = value * 10 + Int64(bytes[offset] - 48)
            offset += 1
        }
        let count = offset - start
        guard count > 0, count == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        return value
    }

    /// A site id as ``SiteID``'s `init?(hex:)` reads it (32 hexadecimal digits, either case), read
    /// from the bytes without making a string.
    private mutating func siteID() -> SiteID? {
        skipWhitespace()
        guard take(UInt8(ascii: "\"")), offset + 33 <= bytes.count, bytes[offset + 32] == UInt8(ascii: "\"") else {
            return nil
        }
        if let lastSite, ByteWords.equal(bytes.baseAddress! + offset, bytes.baseAddress! + lastSite.position, count: 32)
        {
            offset += 33
            if !lastSite.isLowercase { isCanonical = false }
            return lastSite.site
        }
        var site = Data(count: 16)
        let parsed = site.withUnsafeMutableBytes { (site: UnsafeMutableRawBufferPointer) -> Bool in
            for index in 0..<16 {
                guard let high = SiteID.nibble(bytes[offset + 2 * index]),
                    let low = SiteID.nibble(bytes[offset + 2 * index + 1])
                else { return false }
                site[index] = high << 4 | low
            }
            return true
        }
        guard parsed, let site = SiteID(bytes: site) else { return nil }
        // The writer writes lower-case digits.
        let isLowercase = !bytes[offset..<offset + 32].contains { (65...70).contains($0) }
        if !isLowercase { isCanonical = false }
        lastSite = (offset, site, isLowercase)
        offset += 33
        return site
    }

    /// A plain integer literal (`0`, `-12`), no fraction or exponent, within Int64.
    private mutating func integer() -> Int64? {
        skipWhitespace()
        let start = offset
        _ = take(UInt8(ascii: "-"))
        _ = digits()
        guard !isNumberContinuation() else { return nil }
        return canonicalInteger(start..<offset)
    }

    /// An integer value's string (`"-12"`), as ``WireValue/parseInteger(_:)`` reads it, from the
    /// bytes when they hold no escape.
    private mutating func integerString() -> Int64? {
        let start = offset
        guard let name = plainString() else {
            offset = start
            isCanonical = false
            return string().flatMap(WireValue.parseInteger)
        }
        return canonicalInteger(name.start..<name.start + name.count)
    }

    /// The bytes `range` as an integer when they are an optional minus sign and digits without a
    /// leading zero, within Int64 (`-0` is left to the strict reader, which refuses it as a value).
    private func canonicalInteger(_ range: Range<Int>) -> Int64? {
        var position = range.lowerBound
        let negative = position < range.upperBound && bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        let digitsStart = position
        var magnitude: UInt64 = 0
        while position < range.upperBound {
            let digit = bytes[position] &- 48
            guard digit < 10 else { return nil }
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            position += 1
        }
        let count = range.upperBound - digitsStart
        guard count > 0, count == 1 || bytes[digitsStart] != UInt8(ascii: "0") else { return nil }
        if negative {
            guard magnitude > 0, magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

    /// Exact powers of ten as doubles (10^22 is the last one a double holds exactly).
    private static let powersOfTen: [Double] = (0...22).map { pow(10, Double($0)) }

    /// A real: a JSON number that is a finite double, or the string `"Infinity"` or `"-Infinity"`.
    /// Foundation refuses a zero written with an exponent (`0e5`) or a literal that rounds to zero
    /// (`1e-400`), so only a zero spelled `0`, `-0`, `0.0`… is read here.
    private mutating func real() -> Double? {
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") {
            switch string(allowingEscapes: false) {
            case "Infinity": return .infinity
            case "-Infinity": return -.infinity
            default: return nil
            }
        }
        let start = offset
        let negative = take(UInt8(ascii: "-"))
        let integerStart = offset
        guard digits() > 0, offset - integerStart == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        var fractionDigits = 0
        if take(UInt8(ascii: ".")) {
            fractionDigits = digits()
            guard fractionDigits > 0 else { return nil }
        }
        let mantissaEnd = offset
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return nil }
        } else if mantissaEnd - integerStart - (fractionDigits > 0 ? 1 : 0) <= 15 {
            // Up to 15 digits and no exponent: the digits are an exact double and so is the power of
            // ten, and one division rounds correctly (Clinger's fast path), the double `strtod` gives.
            var mantissa: UInt64 = 0
            for byte in bytes[integerStart..<mantissaEnd] where byte != UInt8(ascii: ".") {
                mantissa = mantissa * 10 + UInt64(byte - 48)
            }
            let magnitude = Double(mantissa) / Self.powersOfTen[fractionDigits]
            return negative ? -magnitude : magnitude
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        guard let real = Double(text), real.isFinite else { return nil }
        if real == 0,
            offset != mantissaEnd || bytes[integerStart..<mantissaEnd].contains(where: { (49...57).contains($0) })
        {
            return nil
        }
        return real
    }

    /// Whether the real just read from `range` is written as the writer writes it: only checked
    /// for the common case, an integer of 1 to 15 digits other than zero (the writer writes a
    /// whole double below 2^53 as its integer's digits, and these have no leading zero); any other
    /// real counts as not canonical, and the server writes it again.
    private func isCanonicalReal(_ range: Range<Int>) -> Bool {
        var digits = range
        if digits.first.map({ bytes[$0] }) == UInt8(ascii: "-") { digits = digits.dropFirst() }
        return (1...15).contains(digits.count) && bytes[digits.lowerBound] != UInt8(ascii: "0")
            && bytes[digits].allSatisfy { (48...57).contains($0) }
    }

    private mutating func digits() -> Int {
        let start = offset
        while offset < bytes.count, (48...57).contains(bytes[offset]) { offset += 1 }
        return offset - start
    }

    /// Whether a number goes on past its integer part (a fraction or an exponent).
    private func isNumberContinuation() -> Bool {
        guard offset < bytes.count else { return false }
        let byte = bytes[offset]
        return byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
    }

    private mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// A member this reader has no case for (a repeated known one gives up before): passed over
    /// when this reader reads as `JSONDecoder` does, and gives up otherwise.
    private mutating func skipUnknownMember() -> Bool {
        guard skipsUnknownMembers else { return false }
        return skipValue(depth: 0)
    }

    /// Passes over one value of any JSON type.
    private mutating func skipValue(depth: Int) -> Bool {
        skipWhitespace()
        guard depth < Self.maximumSkippedDepth, offset < bytes.count else { return false }
        switch bytes[offset] {
        case UInt8(ascii: "\""):
            return string() != nil
        case UInt8(ascii: "{"):
            return object { reader, _ in reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            offset += 1
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return true }
            while true {
                guard skipValue(depth: depth + 1) else { return false }
                skipWhitespace()
                if take(UInt8(ascii: "]")) { return true }
                guard take(UInt8(ascii: ",")) else { return false }
            }
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return bool() != nil
        case UInt8(ascii: "n"):
            return literal("null")
        default:
            return real() != nil
        }
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        skipWhitespace()
        let count = word.utf8CodeUnitCount
        guard offset + count <= bytes.count else { return false }
        let matches = word.withUTF8Buffer { expected in
            expected.elementsEqual(bytes[offset..<offset + count])
        }
        if matches { offset += count }
        return matches
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    private mutating func skipWhitespace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09:
                offset += 1
                isCanonical = false
            default: return
            }
        }
    }
}
