extension Database {
    /// A statement for `sql` with its arguments bound, ready to step.
    func boundStatement(_ sql: SQL) throws(DatabaseError) -> Statement {
        let statement = try cachedStatement(sql.text)
        try statement.bind(StatementArguments(sql.arguments))
        return statement
    }

    /// Streams the rows of a query; each row is valid until the next call to `next()`.
    ///
    /// ```swift
    /// let cursor = try db.fetchCursor("SELECT * FROM reminders WHERE done = \(false)")
    /// while let row = try cursor.next() { print(try row["title"] as String) }
    /// ```
    public func fetchCursor(_ sql: SQL) throws(DatabaseError) -> RowCursor {
        RowCursor(statement: try boundStatement(sql), arguments: sql.arguments)
    }

    /// All rows of a query, copied.
    public func fetchAll(_ sql: SQL) throws -> [Row] {
        try fetchCursor(sql).toArray()
    }

    /// The first row of a query, copied, or nil.
    public func fetchOne(_ sql: SQL) throws -> Row? {
        let cursor = try fetchCursor(sql)
        // The row is a view of the cursor's statement: read it before the cursor goes away.
        return try withExtendedLifetime(cursor) { try cursor.next()?.copy() }
    }

    /// The first column of the first row: nil when there is no row or the value is NULL.
    ///
    /// ```swift
    /// let count = try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") ?? 0
    /// ```
    public func fetchValue<Value: DatabaseValueConvertible>(_ type: Value.Type, _ sql: SQL) throws -> Value? {
        let cursor = try fetchCursor(sql)
        return try withExtendedLifetime(cursor) {
            guard let row = try cursor.next() else { return nil }
            return try row.decode(Value?.self, at: 0)
        }
    }

    /// The first column of every row.
    public func fetchAll<Value: DatabaseValueConvertible>(_ type: Value.Type, _ sql: SQL) throws -> [Value] {
        try ValueCursor<Value>(rows: fetchCursor(sql)).toArray()
    }

    /// Streams the first column of every row.
    public func fetchCursor<Value: DatabaseValueConvertible>(_ type: Value.Type, _ sql: SQL) throws
        -> ValueCursor<Value>
    {
        ValueCursor(rows: try fetchCursor(sql))
    }
}
