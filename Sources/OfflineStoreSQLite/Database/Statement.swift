import CSQLite
import Foundation

/// One prepared statement (`sqlite3_stmt*`), owned by this object and
/// finalized when it goes away.
///
/// Get one from ``Database/cachedStatement(_:)`` (prepared once per
/// connection and SQL text) or ``Database/makeStatement(_:)``. After every
/// execution the statement is reset and its bindings cleared.
///
/// ```swift
/// let insert = try db.cachedStatement("INSERT INTO reminders (id, title) VALUES (?, ?)")
/// for (id, title) in items {
///     try insert.execute(id, title)   // binds without boxing the values
/// }
/// ```
///
/// See <https://www.sqlite.org/c3ref/stmt.html>.
public final class Statement {
    /// The SQL text this statement was prepared from.
    public let sql: String
    /// How many `?`/`:name` parameters the SQL has.
    public let parameterCount: Int
    /// How many columns a row of this statement has (re-read when SQLite re-prepares it after a schema change).
    @exclusivity(unchecked) public private(set) var columnCount: Int

    // Read on every column access: exclusivity is guaranteed by the type being non-Sendable.
    @usableFromInline @exclusivity(unchecked) private(set) var pointer: OpaquePointer?
    @usableFromInline let connection: ConnectionHandle
    /// A cursor is reading from this statement; the cache must not hand it out again.
    @exclusivity(unchecked) var isIterating = false
    /// Advanced on every step and reset, so a ``Row`` can tell it outlived the row it viewed.
    @usableFromInline let rowGeneration = RowGeneration.acquire()
    /// Column names and their lookup table, read at prepare time and again whenever SQLite
    /// re-prepares the statement (a `SELECT *` after a table rebuild can change them).
    @exclusivity(unchecked) private(set) var columns: RowColumns
    /// The keyed containers ``RowDecoder`` decoded this statement's rows with, reused for the next rows.
    @usableFromInline let keyedContainers = KeyedContainerCache()
    /// `SQLITE_STMTSTATUS_REPREPARE` when `columns` was read.
    @exclusivity(unchecked) private var columnsReprepareCount: Int32 = 0
    /// The next step is the first since a reset: the moment SQLite may re-prepare.
    @exclusivity(unchecked) private var isAtStart = true
    /// What the statement reads and writes, when its connection recorded it while preparing it.
    let access: StatementAccess?
    /// `sqlite3_stmt_readonly`: the statement writes nothing (transaction control included).
    let isReadOnly: Bool

    init(sql: String, pointer: OpaquePointer, connection: ConnectionHandle, access: StatementAccess? = nil) {
        self.sql = sql
        self.pointer = pointer
        self.connection = connection
        self.access = access
        isReadOnly = sqlite3_stmt_readonly(pointer) != 0
        parameterCount = Int(sqlite3_bind_parameter_count(pointer))
        (columnCount, columns) = Self.readColumns(pointer)
    }

    private static func readColumns(_ pointer: OpaquePointer) -> (Int, RowColumns) {
        let count = Int(sqlite3_column_count(pointer))
        let names = (0..<count).map { index in
            sqlite3_column_name(pointer, Int32(index)).map { String(cString: $0) } ?? ""
        }
        return (count, RowColumns(names: names))
    }

    /// After a first step: if SQLite re-prepared the statement (schema changed), read its columns again.
    /// See <https://www.sqlite.org/c3ref/stmt_status.html>.
    private func refreshColumnsIfReprepared(_ handle: OpaquePointer) {
        let reprepares = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        guard reprepares != columnsReprepareCount else { return }
        columnsReprepareCount = reprepares
        (columnCount, columns) = Self.readColumns(handle)
    }

    deinit {
        sqlite3_finalize(pointer)
        rowGeneration.relinquish()
    }

    /// The live handle; a misuse error after ``finalize()`` or once the connection closed.
    @inline(__always)
    func handle() throws(DatabaseError) -> OpaquePointer {
        guard let pointer, connection.isOpen else {
            throw .misuse(
                pointer == nil ? "statement used after finalize()" : "statement used after its connection was closed",
                sql: sql)
        }
        return pointer
    }

    /// Releases the statement now. Finalizing twice, or using it afterwards, is a misuse error.
    /// See <https://www.sqlite.org/c3ref/finalize.html>.
    public func finalize() throws(DatabaseError) {
        guard let pointer else { throw .misuse("finalize() called twice", sql: sql) }
        rowGeneration.advance()
        sqlite3_finalize(pointer)
        self.pointer = nil
    }

    /// The column names of a row.
    public var columnNames: [String] { columns.names }

    // MARK: Binding

    /// Binds `values` to parameters 1, 2, … in order.
    package func bind(positional values: [DatabaseValue]) throws(DatabaseError) {
        for index in values.indices { try bind(values[index], toParameter: index + 1) }
    }

    /// Binds one value to the 1-based SQLite parameter number `index`.
    /// See <https://www.sqlite.org/c3ref/bind_blob.html>.
    public func bind(_ value: DatabaseValue, toParameter index: Int) throws(DatabaseError) {
        let handle = try handle()
        let position = Int32(index)
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, position)
        case .integer(let integer):
            code = sqlite3_bind_int64(handle, position, integer)
        case .real(let real):
            guard !real.isNaN else {
                throw DatabaseError.conversion(
                    "parameter \(index) is NaN, which SQLite would store as NULL; store NULL or a sentinel explicitly"
                ).with(sql: sql, arguments: nil, showsArguments: false)
            }
            code = sqlite3_bind_double(handle, position, real)
        case .text(let text) where text.utf8.count > Int32.max:
            throw tooBig(index, text.utf8.count)
        case .blob(let bytes) where bytes.count > Int32.max:
            throw tooBig(index, bytes.count)
        case .text(var text):
            code = text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) {
                    csqlite_bind_text_copy(handle, position, $0.baseAddress ?? emptyCString, Int32(clamping: $0.count))
                }
            }
        case .blob(let bytes) where bytes.isEmpty:
            // A nil pointer would bind NULL: an empty BLOB must stay an empty BLOB.
            code = sqlite3_bind_zeroblob(handle, position, 0)
        case .blob(let bytes):
            code = bytes.withUnsafeBytes { buffer in
                csqlite_bind_blob_copy(handle, position, buffer.baseAddress, Int32(clamping: buffer.count))
            }
        }
        guard code == SQLITE_OK else { throw connection.lastError(code: code, sql: sql) }
    }

    private func tooBig(_ index: Int, _ byteCount: Int) -> DatabaseError {
        DatabaseError(
            resultCode: .tooBig, message: "parameter \(index) holds \(byteCount) bytes, more than SQLite can bind",
            sql: sql)
    }

    /// Binds all arguments after checking their number (and names) against the SQL.
    public func bind(_ arguments: StatementArguments) throws(DatabaseError) {
        let handle = try handle()
        sqlite3_clear_bindings(handle)
        var nextPositional = 0
        for index in stride(from: 1, through: parameterCount, by: 1) {
            let value: DatabaseValue
            // Named parameters (`:a`, `@a`, `$a`) have a name; `?` and `?NNN` are positional.
            if let rawName = sqlite3_bind_parameter_name(handle, Int32(index)),
                rawName.pointee != CChar(UInt8(ascii: "?"))
            {
                let name = String(String(cString: rawName).dropFirst())
                if let named = arguments.named[name] {
                    value = named
                } else if nextPositional < arguments.positional.count {
                    value = arguments.positional[nextPositional]
                    nextPositional += 1
                } else {
                    throw DatabaseError(
                        resultCode: .range, message: "no value for parameter :\(name)", sql: sql,
                        arguments: arguments.positional, showsArguments: connection.showsArguments)
                }
            } else if nextPositional < arguments.positional.count {
                value = arguments.positional[nextPositional]
                nextPositional += 1
            } else {
                throw argumentCountError(given: arguments.positional.count, arguments: arguments.positional)
            }
            try bind(value, toParameter: index)
        }
        if nextPositional != arguments.positional.count {
            throw argumentCountError(given: arguments.positional.count, arguments: arguments.positional)
        }
    }

    func argumentCountError(given: Int, arguments: [DatabaseValue]?) -> DatabaseError {
        DatabaseError(
            resultCode: .range,
            message: "the statement has \(parameterCount) parameter(s) but \(given) argument(s) were given", sql: sql,
            arguments: arguments, showsArguments: connection.showsArguments)
    }

    // MARK: Running

    /// Runs the statement to completion with these arguments, then resets it.
    public func execute(_ arguments: StatementArguments) throws(DatabaseError) {
        try bind(arguments)
        try runToCompletion(arguments: arguments.allValues)
    }

    /// Binds `values` in order (no boxing, no array) and runs the statement to completion.
    ///
    /// ```swift
    /// try insert.execute(id, "Buy milk", false, Date())
    /// ```
    public func execute<each Value: DatabaseValueConvertible>(_ values: repeat each Value) throws(DatabaseError) {
        var given = 0
        for _ in repeat each values { given += 1 }
        guard given == parameterCount else { throw argumentCountError(given: given, arguments: nil) }
        var index = 0
        for value in repeat each values {
            index += 1
            try bind(value.databaseValue, toParameter: index)
        }
        try runToCompletion(arguments: nil)
    }

    /// Steps until SQLITE_DONE, discarding any rows, then resets and clears bindings.
    package func runToCompletion(arguments: [DatabaseValue]?) throws(DatabaseError) {
        let handle = try handle()
        try checkTransactionIntact(handle)
        let tracker = connection.tracker
        tracker?.willRun(access: access, isReadOnly: isReadOnly)
        defer { resetAndClear(handle) }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { return }
            if code != SQLITE_ROW { throw connection.lastError(code: code, sql: sql, arguments: arguments) }
        }
    }

    /// One `sqlite3_step`: true when a row is ready, false when done.
    @inline(__always)
    package func step(arguments: [DatabaseValue]?) throws(DatabaseError) -> Bool {
        let handle = try handle()
        let isFirstStep = isAtStart
        // A statement's writes (RETURNING included) all happen in its first step.
        if isFirstStep {
            try checkTransactionIntact(handle)
            connection.tracker?.willRun(access: access, isReadOnly: isReadOnly)
        }
        rowGeneration.advance()
        let code = sqlite3_step(handle)
        if isFirstStep {
            isAtStart = false
            refreshColumnsIfReprepared(handle)
        }
        connection.tracker?.afterStep(sqlite3_db_handle(handle))
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        let error = connection.lastError(code: code, sql: sql, arguments: arguments)
        sqlite3_reset(handle)
        throw error
    }

    /// Refuses to run while a ``Database/transaction(_:_:)`` believes it is open but SQLite
    /// has already rolled it back: the statement would otherwise commit on its own.
    @inline(__always)
    private func checkTransactionIntact(_ handle: OpaquePointer) throws(DatabaseError) {
        guard connection.managedTransactionDepth > 0, sqlite3_get_autocommit(sqlite3_db_handle(handle)) != 0 else {
            return
        }
        throw DatabaseError(
            resultCode: .abort,
            message:
                "SQLite rolled back the enclosing transaction (ROLLBACK conflict resolution, RAISE(ROLLBACK), a full disk or an I/O error); nothing more runs until transaction(_:_:) returns, so no statement commits on its own",
            sql: sql)
    }

    /// Makes the statement ready for its next use. See <https://www.sqlite.org/c3ref/reset.html>.
    package func reset() {
        if let pointer { resetAndClear(pointer) }
    }

    @inline(__always)
    private func resetAndClear(_ handle: OpaquePointer) {
        rowGeneration.advance()
        isAtStart = true
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        // A statement of its own transaction stopped before its end commits here.
        connection.tracker?.afterStep(sqlite3_db_handle(handle))
    }

    // MARK: Reading the current row

    /// The value of column `index` of the current row, copied out of SQLite.
    package func value(at index: Int) throws(DatabaseError) -> DatabaseValue {
        let handle = try handle()
        do {
            return try StatementColumn(statement: handle, index: Int32(index)).databaseValue()
        } catch let error as DatabaseError {
            throw error.prefixed("column '\(columns.names[index])'").with(
                sql: sql, arguments: nil, showsArguments: false)
        } catch {
            throw DatabaseError(resultCode: .error, message: "\(error)", sql: sql)
        }
    }
}

@available(*, unavailable, message: "A Statement belongs to one connection")
extension Statement: Sendable {}
