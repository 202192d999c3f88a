import CSQLite
import Foundation

extension Database {
    /// Prepares a new statement that the caller owns. `sql` must hold exactly one statement.
    /// See <https://www.sqlite.org/c3ref/prepare.html>.
    public func makeStatement(_ sql: String) throws(DatabaseError) -> Statement {
        try prepareSingle(sql, persistent: false)
    }

    /// The connection's prepared statement for this SQL text, prepared on first use.
    ///
    /// When the cached statement is busy in an open cursor, a fresh statement is prepared instead.
    public func cachedStatement(_ sql: String) throws(DatabaseError) -> Statement {
        if let cached = statementCache[sql] {
            if !cached.isIterating { return cached }
            return try prepareSingle(sql, persistent: false)
        }
        let statement = try prepareSingle(sql, persistent: true)
        statementCache[sql] = statement
        return statement
    }

    /// Runs one statement whose values are interpolated as bound parameters.
    ///
    /// ```swift
    /// try db.execute("UPDATE reminders SET done = \(true) WHERE id = \(id)")
    /// ```
    public func execute(_ sql: SQL) throws(DatabaseError) {
        let statement = try cachedStatement(sql.text)
        try statement.execute(StatementArguments(sql.arguments))
    }

    /// Runs one statement with separately bound arguments.
    public func execute(sql: String, arguments: StatementArguments = []) throws(DatabaseError) {
        let statement = try cachedStatement(sql)
        try statement.execute(arguments)
    }

    /// Runs several `;`-separated statements in order, stopping at the first
    /// failure; the error names that statement and its position. Scripts take
    /// no arguments: bind values through ``execute(_:)``.
    ///
    /// Not wrapped in a transaction: statements before a failure stay applied
    /// unless the caller runs the script inside ``transaction(_:_:)``.
    ///
    /// See <https://www.sqlite.org/c3ref/prepare.html> (the `pzTail` output).
    public func executeScript(_ script: String) throws(DatabaseError) {
        let handle = try connection.handle(for: "executeScript")
        var utf8 = Array(script.utf8CString)
        let total = utf8.count - 1
        var offset = 0
        var ordinal = 0
        while offset < total {
            var prepared: OpaquePointer?
            var consumed = 0
            connection.tracker?.beginPreparing()
            let code = utf8.withUnsafeMutableBufferPointer { buffer -> Int32 in
                let start = buffer.baseAddress! + offset
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v3(handle, start, Int32(total - offset), 0, &prepared, &tail)
                consumed = tail.map { $0 - UnsafePointer(start) } ?? (total - offset)
                return code
            }
            let remaining = String(decoding: utf8[offset..<total].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard code == SQLITE_OK else {
                ordinal += 1
                throw connection.lastError(code: code, sql: Self.firstStatementText(remaining))
                    .prefixed("statement \(ordinal) of the script failed to prepare")
            }
            offset += max(consumed, 1)
            guard let prepared else { continue }  // whitespace or a comment
            ordinal += 1
            let statement = Statement(
                sql: String(cString: sqlite3_sql(prepared)), pointer: prepared, connection: connection,
                access: connection.tracker?.endPreparing())
            do {
                try statement.runToCompletion(arguments: nil)
            } catch {
                throw error.prefixed("statement \(ordinal) of the script failed")
            }
        }
    }

    private static func firstStatementText(_ remaining: String) -> String {
        let trimmed = remaining.trimmingCharacters(in: .whitespacesAndNewlines)
        let firstLine = trimmed.prefix { $0 != ";" }
        return firstLine.count > 200 ? String(firstLine.prefix(200)) + "…" : String(firstLine)
    }

    private func prepareSingle(_ sql: String, persistent: Bool) throws(DatabaseError) -> Statement {
        let handle = try connection.handle(for: "prepare a statement")
        var prepared: OpaquePointer?
        var trailing = ""
        let flags = UInt32(persistent ? SQLITE_PREPARE_PERSISTENT : 0)
        connection.tracker?.beginPreparing()
        let code = sql.withCString { text -> Int32 in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(handle, text, -1, flags, &prepared, &tail)
            if let tail, tail.pointee != 0 { trailing = String(cString: tail) }
            return code
        }
        guard code == SQLITE_OK else { throw connection.lastError(code: code, sql: sql) }
        guard let prepared else {
            throw DatabaseError.misuse("the SQL holds no statement (only whitespace or comments)", sql: sql)
        }
        let statement = Statement(
            sql: sql, pointer: prepared, connection: connection, access: connection.tracker?.endPreparing())
        if try !Self.isBlank(trailing, handle: handle) {
            throw DatabaseError.misuse(
                "the SQL holds more than one statement; run several with executeScript(_:)", sql: sql)
        }
        return statement
    }

    /// Whether text after a statement is only whitespace, comments and semicolons.
    private static func isBlank(_ text: String, handle: OpaquePointer) throws(DatabaseError) -> Bool {
        if text.allSatisfy({ $0.isWhitespace || $0 == ";" }) { return true }
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, text, -1, 0, &prepared, nil)
        defer { sqlite3_finalize(prepared) }
        return code == SQLITE_OK && prepared == nil
    }
}
