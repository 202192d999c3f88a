import OfflineStoreSQLite

extension TableDefinition {
    /// `CREATE TABLE IF NOT EXISTS …` (or `CREATE VIRTUAL TABLE … USING fts5(…)`) for this
    /// definition, optionally under another name (the table-rebuild helper builds a new table
    /// beside the old one). See <https://www.sqlite.org/lang_createtable.html>.
    public func createTableSQL(named tableName: String? = nil) -> String {
        let quotedName = quoteIdentifier(tableName ?? name)
        if case .fts5(let ftsOptions) = kind {
            let columnList = columns.map {
                quoteIdentifier($0.name) + (unindexedColumns.contains($0.name) ? " UNINDEXED" : "")
            }
            let optionList = ftsOptions.map { "\($0.name) = \(DatabaseValue.text($0.value).sqlLiteral)" }
            return
                "CREATE VIRTUAL TABLE IF NOT EXISTS \(quotedName) USING fts5(\((columnList + optionList).joined(separator: ", ")))"
        }
        if case .sql(let sql) = kind { return sql }
        var parts = columns.map { columnSQL($0, forAddColumn: false) }
        if !primaryKey.isEmpty {
            parts.append("PRIMARY KEY (\(primaryKey.map(quoteIdentifier).joined(separator: ", ")))")
        }
        for unique in uniqueConstraints {
            parts.append("UNIQUE (\(unique.map(quoteIdentifier).joined(separator: ", ")))")
        }
        for check in checks { parts.append("CHECK (\(check))") }
        for foreignKey in foreignKeys {
            parts.append(
                "FOREIGN KEY (\(foreignKey.columns.map(quoteIdentifier).joined(separator: ", "))) "
                    + Self.referencesClause(foreignKey))
        }
        var tableOptions: [String] = []
        if options.contains(.strict) { tableOptions.append("STRICT") }
        if options.contains(.withoutRowID) { tableOptions.append("WITHOUT ROWID") }
        return "CREATE TABLE IF NOT EXISTS \(quotedName) (\n    " + parts.joined(separator: ",\n    ") + "\n)"
            + (tableOptions.isEmpty ? "" : " " + tableOptions.joined(separator: ", "))
    }

    /// `ALTER TABLE … ADD COLUMN …`. See <https://www.sqlite.org/lang_altertable.html#altertabaddcol>.
    public func addColumnSQL(_ column: Column) -> String {
        "ALTER TABLE \(quoteIdentifier(name)) ADD COLUMN \(columnSQL(column, forAddColumn: true))"
    }

    /// `CREATE [UNIQUE] INDEX IF NOT EXISTS … ON this table`.
    /// See <https://www.sqlite.org/lang_createindex.html>.
    public func createIndexSQL(_ index: Index) -> String {
        let keyColumns = index.columns.map { column in
            quoteIdentifier(column.name) + (column.collation.map { " COLLATE \($0)" } ?? "")
                + (column.isDescending ? " DESC" : "")
        }
        return "CREATE \(index.isUnique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(quoteIdentifier(index.name)) "
            + "ON \(quoteIdentifier(name)) (\(keyColumns.joined(separator: ", ")))"
            + (index.condition.map { " WHERE \($0)" } ?? "")
    }

    private func columnSQL(_ column: Column, forAddColumn: Bool) -> String {
        var sql = quoteIdentifier(column.name)
        if !column.type.rawValue.isEmpty { sql += " " + column.type.rawValue }
        // A non-INTEGER key of a rowid table accepts NULL unless NOT NULL is written.
        if column.isNotNull || (column.isPrimaryKey && column.type != .integer) { sql += " NOT NULL" }
        if column.isPrimaryKey { sql += " PRIMARY KEY" + (column.isAutoincrement ? " AUTOINCREMENT" : "") }
        if column.isUnique { sql += " UNIQUE" }
        if let defaultValue = column.defaultValue { sql += " DEFAULT " + defaultValue.sql }
        if let collation = column.collation { sql += " COLLATE \(collation)" }
        for check in column.checks { sql += " CHECK (\(check))" }
        if let reference = column.reference { sql += " " + Self.referencesClause(reference) }
        return sql
    }

    private static func referencesClause(_ foreignKey: ForeignKeyDefinition) -> String {
        "REFERENCES \(quoteIdentifier(foreignKey.parentTable)) "
            + "(\(foreignKey.parentColumns.map(quoteIdentifier).joined(separator: ", ")))"
            + " ON DELETE \(foreignKey.onDelete.rawValue) ON UPDATE \(foreignKey.onUpdate.rawValue)"
    }
}
