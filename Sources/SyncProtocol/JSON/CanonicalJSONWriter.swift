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
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// The bytes written so far as text (they are always valid UTF-8).
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            var pending = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[pending..<index]))
                pending = index + 1
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                default:
                    raw("u00")
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0x0F)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[pending...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func integer(_ value: Int64) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// A finite double as Foundation writes it: `description`, less a trailing `.0` (`1`, `-0`,
    /// `1e-05`, `1e+20`).
    mutating func real(_ value: Double) {
        let text = value.description
        let utf8 = text.utf8
        if utf8.count > 2, text.hasSuffix(".0") {
            bytes.append(contentsOf: utf8.dropLast(2))
        } else {
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func siteID(_ site: SiteID) {
        bytes.append(UInt8(ascii: "\""))
        for byte in site.bytes {
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Throws `EncodingError.invalidValue` for NaN, which has no encoding (as ``WireValue``'s
    /// `encode(to:)` does).
    public mutating func write(_ value: WireValue) throws {
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
            bytes.append(contentsOf: data.base64EncodedString().utf8)
            raw(#""}"#)
        }
    }

    /// A row's key or columns: an object whose members are sorted by the UTF-8 bytes of their names.
    public mutating func write(_ values: [String: WireValue]) throws {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for (name, value) in values.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            string(name)
            bytes.append(UInt8(ascii: ":"))
            try write(value)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// A change, its members in sorted order: clock, columns, key, op, seq, site, table.
    public mutating func write(_ change: Change) throws {
        raw(#"{"clock":""#)
        integer(change.clock.milliseconds)
        bytes.append(UInt8(ascii: "-"))
        integer(change.clock.counter)
        raw(#"","columns":"#)
        try write(change.columns)
        raw(#","key":"#)
        try write(change.key)
        raw(#","op":"#)
        string(change.op.rawValue)
        raw(#","seq":"#)
        integer(change.seq)
        raw(#","site":"#)
        siteID(change.site)
        raw(#","table":"#)
        string(change.table)
        bytes.append(UInt8(ascii: "}"))
    }

    /// A pull page, its members in sorted order: changes, cursor, hasMore, phase, remaining.
    public mutating func write(_ response: PullResponse) throws {
        try openWith(response.changes)
        raw(#","cursor":"#)
        string(response.cursor)
        raw(response.hasMore ? #","hasMore":true,"phase":"# : #","hasMore":false,"phase":"#)
        string(response.phase.rawValue)
        raw(#","remaining":"#)
        integer(response.remaining)
        bytes.append(UInt8(ascii: "}"))
    }

    /// A push, its members in sorted order: changes, protocolVersion, schemaVersion, site. A
    /// client writes its pushes with it: through `Encodable`, encoding a push cost a client more
    /// than reading its changes from the log.
    public mutating func write(_ request: PushRequest) throws {
        try openWith(request.changes)
        raw(#","protocolVersion":"#)
        bytes.append(contentsOf: String(request.protocolVersion).utf8)
        raw(#","schemaVersion":"#)
        string(request.schemaVersion.description)
        raw(#","site":"#)
        siteID(request.site)
        bytes.append(UInt8(ascii: "}"))
    }

    /// `{"changes":[…]`, the first member of a pull page and of a push.
    private mutating func openWith(_ changes: [Change]) throws {
        raw(#"{"changes":["#)
        for (index, change) in changes.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            try write(change)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
