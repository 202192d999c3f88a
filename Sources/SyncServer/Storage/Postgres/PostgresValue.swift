import Foundation

/// A statement parameter, sent in PostgreSQL's binary format so 64-bit integers, doubles
/// (infinities and NaN included) and bytes arrive bit for bit; text is its UTF-8 bytes.
/// One-dimensional arrays carry a whole batch in one parameter (`unnest($2::text[])`).
///
/// ```swift
/// try connection.execute(Statements.insertLog, [.int8(datasetID), .array(.int8, serials.map(PostgresValue.int8))])
/// ```
///
/// See <https://www.postgresql.org/docs/15/protocol-overview.html#PROTOCOL-FORMAT-CODES> and, for
/// arrays, `array_send` in `src/backend/utils/adt/arrayfuncs.c`.
enum PostgresValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int2(Int16)
    case int8(Int64)
    case float8(Double)
    case text(String)
    case bytea(Data)
    /// A one-dimensional array of `element` values (nulls allowed), lower bound 1.
    indirect case array(PostgresType, [PostgresValue])

    /// The binary wire form, or nil for SQL NULL.
    var binary: [UInt8]? {
        switch self {
        case .null: return nil
        case .bool(let value): return [value ? 1 : 0]
        case .int2(let value): return Self.bigEndian(UInt16(bitPattern: value))
        case .int8(let value): return Self.bigEndian(UInt64(bitPattern: value))
        case .float8(let value): return Self.bigEndian(value.bitPattern)
        case .text(let value): return Array(value.utf8)
        case .bytea(let value): return Array(value)
        case .array(let element, let values):
            var bytes: [UInt8] = []
            bytes += Self.bigEndian(UInt32(1))  // dimensions
            bytes += Self.bigEndian(UInt32(values.contains(.null) ? 1 : 0))  // has nulls
            bytes += Self.bigEndian(element.rawValue)
            bytes += Self.bigEndian(UInt32(values.count))  // length of the dimension
            bytes += Self.bigEndian(UInt32(1))  // lower bound
            for value in values {
                if let encoded = value.binary {
                    bytes += Self.bigEndian(UInt32(encoded.count))
                    bytes += encoded
                } else {
                    bytes += Self.bigEndian(UInt32(bitPattern: -1))
                }
            }
            return bytes
        }
    }

    private static func bigEndian<Integer: FixedWidthInteger>(_ value: Integer) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    /// An optional integer, NULL when absent.
    static func optionalInt8(_ value: Int64?) -> PostgresValue { value.map { .int8($0) } ?? .null }
    /// Optional text, NULL when absent.
    static func optionalText(_ value: String?) -> PostgresValue { value.map { .text($0) } ?? .null }
    /// Optional bytes, NULL when absent.
    static func optionalBytea(_ value: Data?) -> PostgresValue { value.map { .bytea($0) } ?? .null }
}
