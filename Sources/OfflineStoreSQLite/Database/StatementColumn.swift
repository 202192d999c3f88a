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
        return decodeSQLiteText(bytes, count: Int(sqlite3_value_bytes(value)))
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

/// Text from the `count` UTF-8 bytes at `text`, or nil when they are not valid UTF-8 (never
/// repaired: a silent U+FFFD would be data loss).
///
/// `text` must come from `sqlite3_value_text`, which always puts a NUL after the bytes
/// (<https://www.sqlite.org/c3ref/column_blob.html>); the NUL is what lets the standard library's
/// C-string initializer validate and copy in one pass.
@inlinable
func decodeSQLiteText(_ text: UnsafePointer<UInt8>, count: Int) -> String? {
    if count <= 15, let ascii = smallASCIIString(UnsafeRawPointer(text), count: count) { return ascii }
    // Longer text, and text with any non-ASCII byte: `String(validatingCString:)` checks the bytes
    // once (ASCII words first, then full UTF-8 rules) and copies them, where checking for ASCII
    // ourselves and then calling `String(decoding:)` would check twice. It stops at the first NUL,
    // so the counts differ for text with a NUL inside.
    let decoded = text.withMemoryRebound(to: CChar.self, capacity: count + 1) { String(validatingCString: $0) }
    guard let decoded else { return nil }
    if decoded.utf8.count == count { return decoded }
    // Rare: a NUL inside the text. `String(validating:)` is generic and slow, but exact.
    return String(validating: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
}

/// Up to 15 ASCII bytes as an inline (small) string, without an allocation; nil for any other
/// byte, and for more than 15 bytes.
///
/// Checks and copies whole words, two that may overlap (a 15-byte string is bytes 0..<8 and
/// 7..<15), instead of a byte at a time and a `memmove` call.
@inlinable
func smallASCIIString(_ text: UnsafeRawPointer, count: Int) -> String? {
    switch count {
    case 8...15: asciiString(text, count: count, wordsOf: UInt64.self)
    case 4...7: asciiString(text, count: count, wordsOf: UInt32.self)
    case 2...3: asciiString(text, count: count, wordsOf: UInt16.self)
    case 1: asciiString(text, count: count, wordsOf: UInt8.self)
    case 0: ""
    default: nil
    }
}

/// `count` bytes (from one to two words of `Word`) as a string when all are ASCII, else nil.
@inlinable @inline(__always)
func asciiString<Word: FixedWidthInteger & UnsignedInteger>(
    _ text: UnsafeRawPointer, count: Int, wordsOf: Word.Type
) -> String? {
    let size = MemoryLayout<Word>.size
    let head = text.loadUnaligned(as: Word.self)
    let tail = text.loadUnaligned(fromByteOffset: count - size, as: Word.self)
    guard (head | tail) & Word(truncatingIfNeeded: 0x8080_8080_8080_8080 as UInt64) == 0 else { return nil }
    // ASCII is valid UTF-8 as it is: the initializer keeps it unchanged.
    return String(unsafeUninitializedCapacity: count) { buffer in
        guard let target = buffer.baseAddress else { return 0 }
        let raw = UnsafeMutableRawPointer(target)
        raw.storeBytes(of: head, as: Word.self)
        raw.storeBytes(of: tail, toByteOffset: count - size, as: Word.self)
        return count
    }
}
