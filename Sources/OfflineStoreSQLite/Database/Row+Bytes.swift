import CSQLite
import Foundation

extension Row {
    /// The bytes of the TEXT or BLOB at a 0-based index, read in place: no `String` (its UTF-8
    /// check and copy) and no `Data` (its copy) is made, for bytes passed on as they are, such as
    /// stored JSON spliced into a response. The buffer is valid only inside `body`, which must not move the cursor; NULL is an
    /// empty buffer; an INTEGER or REAL is a conversion error (never formatted as text).
    ///
    /// ```swift
    /// while let row = try cursor.next() {
    ///     try row.withUnsafeBytes(at: 1) { body.append(contentsOf: $0) }
    /// }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/column_blob.html>.
    public func withUnsafeBytes<Result>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) throws
        -> Result
    {
        // The current row of a live statement, read where SQLite keeps it.
        if case .statement(let unmanaged, let rowGeneration) = source, rowGeneration.current == generation,
            let pointer = unmanaged._withUnsafeGuaranteedRef({ statement -> OpaquePointer? in
                guard statement.connection.isOpen, UInt(bitPattern: index) < UInt(bitPattern: statement.columnCount)
                else { return nil }
                return statement.pointer
            })
        {
            let column = StatementColumn(statement: pointer, index: Int32(truncatingIfNeeded: index))
            let bytes: UnsafeRawBufferPointer
            switch column.textOrBlobBytes {
            case .bytes(let found): bytes = found
            case .notBytes: throw contextualized(Self.notBytes(try column.databaseValue()), column: index)
            case .unavailable:
                throw DatabaseError(
                    resultCode: .noMemory, message: "SQLite could not give the bytes of column \(index)")
            }
            return try body(bytes)
        }
        // A copied row, and the checks (stale row, bad index) `databaseValue(at:)` makes.
        switch try databaseValue(at: index) {
        case .text(var text): return try text.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
        case .blob(let data): return try data.withUnsafeBytes(body)
        case .null: return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        case let value: throw contextualized(Self.notBytes(value), column: index)
        }
    }

    private static func notBytes(_ value: DatabaseValue) -> DatabaseError {
        DatabaseError.conversion("\(value) is not TEXT or BLOB; read it with decode(_:at:)")
    }
}

/// What ``StatementColumn/textOrBlobBytes`` found.
private enum ColumnBytes {
    case bytes(UnsafeRawBufferPointer)
    /// An INTEGER or REAL.
    case notBytes
    /// SQLite gave no pointer for a value with a length (it could not convert it: out of memory).
    case unavailable
}

extension StatementColumn {
    /// The TEXT's or BLOB's bytes where SQLite keeps them (empty for NULL). See
    /// <https://www.sqlite.org/c3ref/value_blob.html>.
    fileprivate var textOrBlobBytes: ColumnBytes {
        switch sqlite3_value_type(value) {
        // Pointer first, then length: the documented safe order.
        case SQLITE_TEXT:
            return Self.bytes(
                at: sqlite3_value_text(value).map(UnsafeRawPointer.init), count: sqlite3_value_bytes(value))
        case SQLITE_BLOB:
            return Self.bytes(at: sqlite3_value_blob(value), count: sqlite3_value_bytes(value))
        case SQLITE_NULL:
            return .bytes(UnsafeRawBufferPointer(start: nil, count: 0))
        default:
            return .notBytes
        }
    }

    private static func bytes(at start: UnsafeRawPointer?, count: Int32) -> ColumnBytes {
        if count == 0 { return .bytes(UnsafeRawBufferPointer(start: nil, count: 0)) }
        guard let start else { return .unavailable }
        return .bytes(UnsafeRawBufferPointer(start: start, count: Int(count)))
    }
}
