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

    /// The push, or nil when the body is not one this reader vouches for.
    static func read(_ data: Data, limits: Limits) -> PushRequest? {
        // The deepest a push nests is five (body, changes, change, columns, value); a lower limit
        // makes the strict reader's depth check decide.
        guard limits.maxNestingDepth >= 5 else { return nil }
        return data.withUnsafeBytes { raw in
            var reader = MessageReader(bytes: raw.bindMemory(to: UInt8.self), skipsUnknownMembers: false)
            return reader.push()
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
    /// caller then decodes with `JSONDecoder`, which produces the error (or the value).
    ///
    /// Why it pays: decoding a page through `JSONDecoder` cost about 270,000 instructions per
    /// change (a boxed container per value, two for each tagged value), more than applying it.
    ///
    /// ```swift
    /// let page = MessageReader.readPullPage(body) ?? (try JSONDecoder().decode(PullResponse.self, from: body))
    /// ```
    package static func readPullPage(_ data: Data) -> PullResponse? {
        data.withUnsafeBytes { raw in
            var reader = MessageReader(bytes: raw.bindMemory(to: UInt8.self), skipsUnknownMembers: true)
            return reader.pullPage()
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>, skipsUnknownMembers: Bool) {
        self.bytes = bytes
        self.skipsUnknownMembers = skipsUnknownMembers
    }

    private mutating func push() -> PushRequest? {
        var protocolVersion: Int?
        var schemaVersion: SchemaVersion?
        var site: SiteID?
        var changes: [Change]?
        let complete = object { reader, name in
            switch name {
            case "protocolVersion" where protocolVersion == nil:
                protocolVersion = reader.integer().flatMap { Int(exactly: $0) }
                return protocolVersion != nil
            case "schemaVersion" where schemaVersion == nil:
                schemaVersion = reader.string().flatMap(SchemaVersion.init)
                return schemaVersion != nil
            case "site" where site == nil:
                site = reader.siteID()
                return site != nil
            case "changes" where changes == nil:
                changes = reader.changes()
                return changes != nil
            default:
                return false
            }
        }
        skipWhitespace()
        guard complete, offset == bytes.count, let protocolVersion, let schemaVersion, let site, let changes else {
            return nil
        }
        return PushRequest(protocolVersion: protocolVersion, schemaVersion: schemaVersion, site: site, changes: changes)
    }

    private mutating func pullPage() -> PullResponse? {
        var changes: [Change]?
        var cursor: String?
        var hasMore: Bool?
        var phase: PullResponse.Phase?
        var remaining: Int64?
        let complete = object { reader, name in
            switch name {
            case "changes" where changes == nil:
                changes = reader.changes()
                return changes != nil
            case "cursor" where cursor == nil:
                cursor = reader.string()
                return cursor != nil
            case "hasMore" where hasMore == nil:
                hasMore = reader.bool()
                return hasMore != nil
            case "phase" where phase == nil:
                phase = reader.string().flatMap(PullResponse.Phase.init(rawValue:))
                return phase != nil
            case "remaining" where remaining == nil:
                remaining = reader.integer()
                return remaining != nil
            default:
                return reader.skipUnknownMember(name, known: ["changes", "cursor", "hasMore", "phase", "remaining"])
            }
        }
        skipWhitespace()
        guard complete, offset == bytes.count, let changes, let cursor, let hasMore, let phase, let remaining else {
            return nil
        }
        return PullResponse(changes: changes, cursor: cursor, hasMore: hasMore, phase: phase, remaining: remaining)
    }

    private mutating func changes() -> [Change]? {
        skipWhitespace()
        guard take(UInt8(ascii: "[")) else { return nil }
        var changes: [Change] = []
        skipWhitespace()
        if take(UInt8(ascii: "]")) { return changes }
        while true {
            guard let change = change() else { return nil }
            changes.append(change)
            skipWhitespace()
            if take(UInt8(ascii: "]")) { return changes }
            guard take(UInt8(ascii: ",")) else { return nil }
        }
    }

    private mutating func change() -> Change? {
        var table: String?
        var key: [String: WireValue]?
        var op: Change.Operation?
        var columns: [String: WireValue]?
        var clock: ChangeClock?
        var site: SiteID?
        var seq: Int64?
        let complete = object { reader, name in
            switch name {
            case "table" where table == nil:
                table = reader.string()
                return table != nil
            case "key" where key == nil:
                key = reader.values()
                return key != nil
            case "op" where op == nil:
                op = reader.string().flatMap(Change.Operation.init(rawValue:))
                return op != nil
            case "columns" where columns == nil:
                columns = reader.values()
                return columns != nil
            case "clock" where clock == nil:
                clock = reader.clock()
                return clock != nil
            case "site" where site == nil:
                site = reader.siteID()
                return site != nil
            case "seq" where seq == nil:
                seq = reader.integer()
                return seq != nil
            default:
                return reader.skipUnknownMember(
                    name, known: ["table", "key", "op", "columns", "clock", "site", "seq"])
            }
        }
        guard complete, let table, let key, let op, let clock, let site, let seq else { return nil }
        return Change(table: table, key: key, op: op, columns: columns ?? [:], clock: clock, site: site, seq: seq)
    }

    /// A key or the columns: names (plain, no escapes) to values, none repeated. Names are compared
    /// as Swift strings, as ``StrictJSON`` compares them, so canonically equivalent names count as
    /// repeated.
    private mutating func values() -> [String: WireValue]? {
        var values: [String: WireValue] = [:]
        let complete = object { reader, name in
            guard values[name] == nil, let value = reader.value() else { return false }
            values[name] = value
            return true
        }
        return complete ? values : nil
    }

    /// A tagged value with exactly one member, read as ``WireValue``'s `init(from:)` reads it.
    private mutating func value() -> WireValue? {
        var value: WireValue?
        let complete = object { reader, tag in
            guard value == nil else { return false }
            switch tag {
            case "null":
                guard reader.literal("true") else { return false }
                value = .null
            case "integer":
                value = reader.string().flatMap(WireValue.parseInteger).map(WireValue.integer)
            case "real":
                value = reader.real().map(WireValue.real)
            case "text":
                value = reader.string().map(WireValue.text)
            case "blob":
                // Only the text the bytes encode back to, as the strict reader demands.
                guard let text = reader.string(), let data = Data(base64Encoded: text),
                    data.base64EncodedString() == text
                else { return false }
                value = .blob(data)
            default:
                return false
            }
            return value != nil
        }
        return complete ? value : nil
    }

    /// `{ "name": value, … }`: `member` reads each value (the reader is at it) and returns false
    /// to give up. Returns whether the object was read to its closing brace.
    private mutating func object(_ member: (inout MessageReader, String) -> Bool) -> Bool {
        skipWhitespace()
        guard take(UInt8(ascii: "{")) else { return false }
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard let name = string(allowingEscapes: false) else { return false }
            skipWhitespace()
            guard take(UInt8(ascii: ":")), member(&self, name) else { return false }
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return true }
            guard take(UInt8(ascii: ",")) else { return false }
        }
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
        var site = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            guard let high = SiteID.nibble(bytes[offset + 2 * index]),
                let low = SiteID.nibble(bytes[offset + 2 * index + 1])
            else { return nil }
            site[index] = high << 4 | low
        }
        offset += 33
        return SiteID(bytes: Data(site))
    }

    /// A plain integer literal (`0`, `-12`), no fraction or exponent, within Int64.
    private mutating func integer() -> Int64? {
        skipWhitespace()
        let negative = take(UInt8(ascii: "-"))
        let start = offset
        var magnitude: UInt64 = 0
        while offset < bytes.count, (48...57).contains(bytes[offset]) {
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(bytes[offset] - 48))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            offset += 1
        }
        let count = offset - start
        guard count > 0, count == 1 || bytes[start] != UInt8(ascii: "0"), !isNumberContinuation() else { return nil }
        if negative {
            // "-0" is left to the strict reader.
            guard magnitude > 0, magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }

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
        _ = take(UInt8(ascii: "-"))
        let integerStart = offset
        guard digits() > 0, offset - integerStart == 1 || bytes[integerStart] != UInt8(ascii: "0") else { return nil }
        if take(UInt8(ascii: ".")) {
            guard digits() > 0 else { return nil }
        }
        let mantissaEnd = offset
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return nil }
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

    /// A member this reader has no case for: a repeated known one gives up; an unknown one is
    /// passed over when this reader reads as `JSONDecoder` does, and gives up otherwise.
    private mutating func skipUnknownMember(_ name: String, known: Set<String>) -> Bool {
        guard skipsUnknownMembers, !known.contains(name) else { return false }
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
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }
}
