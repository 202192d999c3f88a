import Foundation
import SyncProtocol

/// Reads a pull page in one pass over its bytes, building the ``PullResponse`` as it goes. It
/// reads the pages servers send to the same values `JSONDecoder` gives, and gives up (nil) on
/// anything else — a syntax error, a repeated member, a `null` where a value belongs, a number
/// that is not a plain integer where an integer belongs, a value the protocol refuses — so the
/// engine then decodes with `JSONDecoder`, which produces the error (or the value). Members it
/// does not know are skipped, as `Decodable` skips them.
///
/// Why it pays: decoding a page through `JSONDecoder` cost about 270,000 instructions per change
/// (a boxed container per value, two for each tagged value), more than applying the change.
///
/// ```swift
/// let page = PullPageReader.read(body) ?? (try JSONDecoder().decode(PullResponse.self, from: body))
/// ```
struct PullPageReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var offset = 0
    /// Deepest nesting `skipValue` follows into a member this reader does not know.
    private static let maximumSkippedDepth = 32

    /// The page, or nil when the body is not one this reader vouches for.
    static func read(_ data: Data) -> PullResponse? {
        data.withUnsafeBytes { raw in
            var reader = PullPageReader(bytes: raw.bindMemory(to: UInt8.self))
            return reader.page()
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    private mutating func page() -> PullResponse? {
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
            case "changes", "cursor", "hasMore", "phase", "remaining":
                return false
            default:
                return reader.skipValue(depth: 0)
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
                clock = reader.string().flatMap(ChangeClock.init)
                return clock != nil
            case "site" where site == nil:
                site = reader.string().flatMap(SiteID.init(hex:))
                return site != nil
            case "seq" where seq == nil:
                seq = reader.integer()
                return seq != nil
            case "table", "key", "op", "columns", "clock", "site", "seq":
                return false
            default:
                return reader.skipValue(depth: 0)
            }
        }
        guard complete, let table, let key, let op, let clock, let site, let seq else { return nil }
        return Change(table: table, key: key, op: op, columns: columns ?? [:], clock: clock, site: site, seq: seq)
    }

    /// `{"name": value, …}` of tagged values, names unique.
    private mutating func values() -> [String: WireValue]? {
        var values: [String: WireValue] = [:]
        let complete = object { reader, name in
            guard values[name] == nil, let value = reader.value() else { return false }
            values[name] = value
            return true
        }
        return complete ? values : nil
    }

    /// One tagged value (see `WireValue`): an object with exactly one of its tags.
    private mutating func value() -> WireValue? {
        var value: WireValue?
        let complete = object { reader, tag in
            guard value == nil else { return false }
            switch tag {
            case "null":
                guard reader.bool() == true else { return false }
                value = .null
            case "integer":
                value = reader.string().flatMap(Self.canonicalInteger).map(WireValue.integer)
            case "real":
                reader.skipWhitespace()
                if reader.peek == UInt8(ascii: "\"") {
                    switch reader.string() {
                    case "Infinity": value = .real(.infinity)
                    case "-Infinity": value = .real(-.infinity)
                    default: return false
                    }
                } else {
                    value = reader.number().map(WireValue.real)
                }
            case "text":
                value = reader.string().map(WireValue.text)
            case "blob":
                // One blob, one text: only the base64 its bytes encode back to.
                value = reader.string().flatMap { text in
                    Data(base64Encoded: text).flatMap { $0.base64EncodedString() == text ? WireValue.blob($0) : nil }
                }
            default:
                return false
            }
            return value != nil
        }
        return complete ? value : nil
    }

    /// An optional minus and digits without a leading zero, within 64 bits (not `-0`).
    private static func canonicalInteger(_ text: String) -> Int64? {
        let utf8 = text.utf8
        let digits = utf8.first == UInt8(ascii: "-") ? utf8.dropFirst() : utf8[...]
        guard let first = digits.first, digits.allSatisfy({ (48...57).contains($0) }),
            first != UInt8(ascii: "0") || digits.count == 1, text != "-0"
        else { return nil }
        return Int64(text)
    }

    // MARK: JSON

    private var peek: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard peek == byte else { return false }
        offset += 1
        return true
    }

    private mutating func take(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard bytes.count - offset >= count else { return false }
        for index in 0..<count where bytes[offset + index] != word.utf8Start[index] { return false }
        offset += count
        return true
    }

    private mutating func skipWhitespace() {
        while let byte = peek, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { offset += 1 }
    }

    /// `{ "name": value, … }`: `member` reads each value (the reader stands before it) and says
    /// whether to go on.
    private mutating func object(_ member: (inout PullPageReader, String) -> Bool) -> Bool {
        skipWhitespace()
        guard take(UInt8(ascii: "{")) else { return false }
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return true }
        while true {
            skipWhitespace()
            guard let name = string() else { return false }
            skipWhitespace()
            guard take(UInt8(ascii: ":")), member(&self, name) else { return false }
            skipWhitespace()
            if take(UInt8(ascii: "}")) { return true }
            guard take(UInt8(ascii: ",")) else { return false }
        }
    }

    private mutating func bool() -> Bool? {
        skipWhitespace()
        if take("true") { return true }
        if take("false") { return false }
        return nil
    }

    /// A JSON string; nil for a control character, a bad escape, a lone surrogate or bytes that
    /// are not UTF-8.
    private mutating func string() -> String? {
        skipWhitespace()
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = offset
        while let byte = peek, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") {
            guard byte >= 0x20 else { return nil }
            offset += 1
        }
        guard let stop = peek else { return nil }
        let plain = UnsafeBufferPointer(rebasing: bytes[start..<offset])
        if stop == UInt8(ascii: "\"") {
            offset += 1
            return String(validating: plain, as: UTF8.self)
        }
        var decoded = Array(plain)
        while let byte = peek {
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(validating: decoded, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = peek else { return nil }
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escaped)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0C)
                case UInt8(ascii: "n"): decoded.append(0x0A)
                case UInt8(ascii: "r"): decoded.append(0x0D)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = unicodeEscape() else { return nil }
                    decoded.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            default:
                guard byte >= 0x20 else { return nil }
                decoded.append(byte)
            }
        }
        return nil
    }

    /// The scalar of `XXXX` after `\u`, or of a surrogate pair `XXXX\uXXXX`.
    private mutating func unicodeEscape() -> Unicode.Scalar? {
        guard let high = hexQuad() else { return nil }
        if (0xD800...0xDBFF).contains(high) {
            guard take("\\u"), let low = hexQuad(), (0xDC00...0xDFFF).contains(low) else { return nil }
            return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        }
        return Unicode.Scalar(high)
    }

    private mutating func hexQuad() -> UInt32? {
        guard bytes.count - offset >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[offset]
            let digit: UInt8
            switch byte {
            case 48...57: digit = byte - 48
            case 97...102: digit = byte - 87
            case 65...70: digit = byte - 55
            default: return nil
            }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    /// The extent of a JSON number (RFC 8259 grammar), and whether it has a fraction or exponent.
    private mutating func numberText() -> (text: UnsafeBufferPointer<UInt8>, isInteger: Bool)? {
        skipWhitespace()
        let start = offset
        _ = take(UInt8(ascii: "-"))
        func digits(_ reader: inout PullPageReader) -> Int {
            var count = 0
            while let byte = reader.peek, (48...57).contains(byte) {
                reader.offset += 1
                count += 1
            }
            return count
        }
        let leading = peek
        let integerDigits = digits(&self)
        guard integerDigits > 0, leading != UInt8(ascii: "0") || integerDigits == 1 else { return nil }
        var isInteger = true
        if take(UInt8(ascii: ".")) {
            guard digits(&self) > 0 else { return nil }
            isInteger = false
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits(&self) > 0 else { return nil }
            isInteger = false
        }
        return (UnsafeBufferPointer(rebasing: bytes[start..<offset]), isInteger)
    }

    /// A plain JSON integer within 64 bits.
    private mutating func integer() -> Int64? {
        guard let (text, isInteger) = numberText(), isInteger else { return nil }
        return Int64(String(decoding: text, as: UTF8.self))
    }

    /// A JSON number as a finite double.
    private mutating func number() -> Double? {
        guard let (text, _) = numberText(), let number = Double(String(decoding: text, as: UTF8.self)),
            number.isFinite
        else { return nil }
        return number
    }

    /// Passes over one value of a member this reader does not know.
    private mutating func skipValue(depth: Int) -> Bool {
        skipWhitespace()
        guard depth < Self.maximumSkippedDepth, let byte = peek else { return false }
        switch byte {
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
            return take("null")
        default:
            return numberText() != nil
        }
    }
}
