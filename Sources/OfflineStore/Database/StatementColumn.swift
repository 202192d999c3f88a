import CSQLite
import Foundation

/// One column of a statement's current row, read in place without copying
/// it into a ``DatabaseValue`` first: the fast path of
/// ``DatabaseValueConvertible/decode(from:)``.
///
/// Valid only while the row it was taken from is current; the library hands
/// it out only inside ``Row/decode(_:at:)``.
///
/// ```swift
/// extension Cents: DatabaseValueConvertible {
///     static func decode(from column: StatementColumn) throws -> Cents {
///         column.storageClass == .integer ? Cents(column.int64) : try fromDatabaseValue(column.databaseValue())
///     }
/// }
/// ```
///
/// See <https://www.sqlite.org/c3ref/column_blob.html>.
public struct StatementColumn {
    /// `sqlite3_column_value`: an unprotected value, read without SQLite's
    /// per-call mutex; safe because a connection is used by one thread at a time.
    @usableFromInline let value: OpaquePointer?

    @inlinable
    init(statement: OpaquePointer, index: Int32) {
        value = sqlite3_column_value(statement, index)
    }

    /// The storage class of the value.
    @inlinable
    public var storageClass: StorageClass {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: .integer
        case SQLITE_FLOAT: .real
        case SQLITE_TEXT: .text
        case SQLITE_BLOB: .blob
        default: .null
        }
    }

    /// The value as a 64-bit integer (meaningful when ``storageClass`` is `.integer`).
    @inlinable
    public var int64: Int64 { sqlite3_value_int64(value) }

    /// The value as a double (meaningful when ``storageClass`` is `.real`).
    @inlinable
    public var double: Double { sqlite3_value_double(value) }

    /// The value as text when it is TEXT holding valid UTF-8, else nil.
    @inlinable
    public var text: String? {
        guard sqlite3_value_type(value) == SQLITE_TEXT else { return nil }
        // Text first, then its length: the documented safe order.
        guard let bytes = sqlite3_value_text(value) else { return "" }
        return decodeUTF8(UnsafeBufferPointer(start: bytes, count: Int(sqlite3_value_bytes(value))))
    }

    /// The value copied into a ``DatabaseValue``.
    public func databaseValue() throws -> DatabaseValue {
        switch sqlite3_value_type(value) {
        case SQLITE_INTEGER: return .integer(int64)
        case SQLITE_FLOAT: return .real(double)
        case SQLITE_TEXT:
            guard let text else {
                throw DatabaseError.conversion(
                    "the TEXT is not valid UTF-8; read it with CAST(... AS BLOB) as Data")
            }
            return .text(text)
        case SQLITE_BLOB:
            guard let bytes = sqlite3_value_blob(value) else { return .blob(Data()) }
            let count = Int(sqlite3_value_bytes(value))
            return .blob(count > 0 ? Data(bytes: bytes, count: count) : Data())
        default:
            return .null
        }
    }
}

/// Text from UTF-8 bytes, or nil when they are not valid UTF-8 (never repaired:
/// a silent U+FFFD would be data loss). ASCII, the common case, takes the
/// stdlib's specialized paths; `String(validating:)` is generic and slow.
@inlinable
func decodeUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
    guard isASCII(bytes) else { return String(validating: bytes, as: UTF8.self) }
    // ASCII needs no repair. Up to 15 bytes the string is stored inline, and filling it in
    // place is cheapest (about 90 instructions fewer than `String(decoding:)`, callgrind); a
    // longer one is cheaper through `String(decoding:)` (about 50 fewer), which checks the
    // bytes once and copies them, where the in-place fill validates them again.
    guard bytes.count > 15 else {
        return String(unsafeUninitializedCapacity: bytes.count) { buffer in
            guard let base = bytes.baseAddress, let target = buffer.baseAddress else { return 0 }
            target.initialize(from: base, count: bytes.count)
            return bytes.count
        }
    }
    return String(decoding: bytes, as: UTF8.self)
}

@inlinable
func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let raw = UnsafeRawPointer(base)
    var offset = 0
    let count = bytes.count
    while offset + 8 <= count {
        if raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
        offset += 8
    }
    while offset < count {
        if base[offset] & 0x80 != 0 { return false }
        offset += 1
    }
    return true
}
