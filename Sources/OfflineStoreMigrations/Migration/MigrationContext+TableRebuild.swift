import OfflineStoreSQLite

extension MigrationContext {
    /// Rebuilds a table to the definition of `model` in this stage's target schema, following
    /// SQLite's documented procedure for schema changes ALTER TABLE cannot make.
    ///
    /// With foreign keys off (the migrator turns them off before the stage's `BEGIN`), it creates
    /// the new table beside the old one, copies every kept column with one `INSERT … SELECT`
    /// (`values` gives an SQL expression over the old row, aliased `old`, for new or changed
    /// columns; `join` adds e.g. a `LEFT JOIN` for a lookup), compares row counts, drops the old
    /// table, renames the new one, recreates indexes, triggers and views, and runs
    /// `foreign_key_check` on the table. Any mismatch aborts the stage with the offending rows.
    ///
    /// Idempotent: when the table already has the target definition it does nothing, and when the
    /// table does not exist yet (fresh or purged database) it creates it.
    ///
    /// ```swift
    /// willMigrate: { context in
    ///     try context.rebuildTable(Reminder.self, values: ["dueAt": "unixepoch(old.dueDate)"])
    /// }
    /// ```
    ///
    /// See <https://www.sqlite.org/lang_altertable.html#otheralter>.
    public func rebuildTable(
        _ model: any Model.Type, values: [String: String] = [:], join: String? = nil
    ) throws {
        try rebuildTable(model.tableDefinition, values: values, join: join)
    }

    /// ``rebuildTable(_:values:join:)-(any Model.Type,_,_)`` for a table definition.
    public func rebuildTable(_ definition: TableDefinition, values: [String: String] = [:], join: String? = nil) throws
    {
        let table = targetSchema.table(named: definition.name) ?? definition
        let name = table.name
        guard try tableExists(name) else {
            try run(SQL(sql: table.createTableSQL()))
            for index in table.indexes { try run(SQL(sql: table.createIndexSQL(index))) }
            return
        }
        let liveSchema = try SchemaSnapshot(liveDatabase: database)
        guard let liveTable = liveSchema.table(named: name) else { return }
        var expected = table.normalized()
        expected.sync = liveTable.sync
        // Only the table itself counts: indexes are added by the reconcile that follows.
        var current = liveTable.normalized()
        current.indexes = []
        expected.indexes = []
        if current == expected { return }
        guard try database.fetchValue(Bool.self, "PRAGMA foreign_keys") == false else {
            throw MigrationError(
                .misuse, stage: stageLabel, "rebuildTable needs foreign keys off, and they are on",
                fix:
                    "call rebuildTable from a stage's willMigrate or didMigrate; the migrator turns keys off before BEGIN"
            )
        }

        let rebuilt = "ostore_rebuild_" + name
        let quotedName = quoteIdentifier(name)
        let quotedRebuilt = quoteIdentifier(rebuilt)
        let dependents = try dependentObjects(of: name)
        for object in dependents where object.type != "index" {
            try run(SQL(sql: "DROP \(object.type.uppercased()) IF EXISTS \(quoteIdentifier(object.name))"))
        }
        let totalRows = try rowCount(name)
        try run(SQL(sql: "DROP TABLE IF EXISTS \(quotedRebuilt)"))
        // When every column stays, the new table takes them in the old table's order (declared
        // order does not count: schemas compare without it, and columns added by a lightweight
        // stage sit at the end anyway). Then `SELECT *` lines up, and without a column list SQLite
        // copies the records and index entries as they are (its transfer optimisation) instead of
        // inserting row by row: several times faster on a large table. SQLite only does so when
        // both declarations accept the same rows, and inserts row by row otherwise.
        let liveOrder = values.isEmpty && join == nil ? Self.columns(of: table, inOrderOf: liveTable) : nil
        var created = table
        if let liveOrder { created.columns = liveOrder }
        try run(SQL(sql: created.createTableSQL(named: rebuilt)))

        reportProgress(operation: "rebuild \(name)", done: 0, total: totalRows)
        let source = "FROM \(quotedName) AS \"old\"" + (join.map { " " + $0 } ?? "")
        do {
            if liveOrder != nil {
                try run(SQL(sql: "INSERT INTO \(quotedRebuilt) SELECT * FROM \(quotedName)"))
            } else {
                let liveColumns = Set(liveTable.columns.map { $0.name.lowercased() })
                var targetColumns: [String] = []
                var sourceExpressions: [String] = []
                for column in table.columns {
                    if let expression = values[column.name] {
                        targetColumns.append(quoteIdentifier(column.name))
                        sourceExpressions.append(expression)
                    } else if liveColumns.contains(column.name.lowercased()) {
                        targetColumns.append(quoteIdentifier(column.name))
                        sourceExpressions.append("\"old\".\(quoteIdentifier(column.name))")
                    }
                }
                // Row progress needs a WHERE clause, which would also turn the transfer
                // optimisation off, so only this path reports rows as it goes.
                try withRowProgress(operation: "rebuild \(name)", total: totalRows) { progressCondition in
                    try run(
                        SQL(
                            sql: "INSERT INTO \(quotedRebuilt) (\(targetColumns.joined(separator: ", "))) "
                                + "SELECT \(sourceExpressions.joined(separator: ", ")) \(source)"
                                + (progressCondition.map { " WHERE \($0)" } ?? "")))
                }
            }
        } catch let error as DatabaseError where error.primaryResultCode == .constraint {
            throw MigrationError(
                .rowCountMismatch, stage: stageLabel,
                "copying \(name) into its new definition failed: \(error.message); the join matches several rows "
                    + "for one row, or a row breaks a constraint of the new definition",
                fix: "join on a unique key with a LEFT JOIN (one match or none per row), and repair rows that break "
                    + "new constraints before the rebuild; the stage was rolled back",
                details: try duplicatedRows(source: source, key: liveTable), databaseError: error)
        }
        // The new table was empty and has no triggers, so the rows this INSERT added are the rows
        // it holds: no second count(*) over the whole copy.
        let copiedRows = database.changesCount
        guard copiedRows == totalRows else {
            throw MigrationError(
                .rowCountMismatch, stage: stageLabel,
                "rebuilding \(name) would turn \(totalRows) rows into \(copiedRows)",
                fix: "a join that matches several rows duplicates, one that drops rows loses them: use a LEFT JOIN "
                    + "on a unique key; the stage was rolled back",
                details: try offendingRows(old: name, new: rebuilt, key: liveTable))
        }
        reportProgress(operation: "rebuild \(name)", done: copiedRows, total: totalRows)
        try run(SQL(sql: "DROP TABLE \(quotedName)"))
        try run(SQL(sql: "ALTER TABLE \(quotedRebuilt) RENAME TO \(quotedName)"))
        let declaredIndexes = Set(table.indexes.map { $0.name.lowercased() })
        for index in table.indexes { try run(SQL(sql: table.createIndexSQL(index))) }
        for object in dependents where !declaredIndexes.contains(object.name.lowercased()) {
            try run(SQL(sql: object.sql))
        }
        // Dropping the old table dropped its noting triggers; the stage's later writes are noted too.
        if recordsChanges, table.sync == .synced,
            let rebuiltTable = try SchemaSnapshot(liveDatabase: database).table(named: name)
        {
            try StageChangeNotes.installTriggers(
                on: database, tables: [rebuiltTable], bookkeeping: try changeLogBookkeeping())
        }
        try Migrator.checkForeignKeys(database, stageLabel: stageLabel, table: name)
        foreignKeysChecked = (name, database.totalChangesCount, try MigrationLedger.schemaCookie(database))
    }

    /// The target's columns in the live table's order, when both tables are ordinary and hold the
    /// same columns by name; nil otherwise. Generated columns also give nil: `SELECT *` reads them
    /// but an INSERT without a column list does not take them.
    private static func columns(of target: TableDefinition, inOrderOf live: TableDefinition) -> [Column]? {
        guard live.kind == .table, target.kind == .table, live.columns.count == target.columns.count else {
            return nil
        }
        var byName: [String: Column] = [:]
        for column in target.columns { byName[column.name.lowercased()] = column }
        var ordered: [Column] = []
        for liveColumn in live.columns {
            guard let column = byName.removeValue(forKey: liveColumn.name.lowercased()),
                !liveColumn.type.rawValue.uppercased().contains("GENERATED"),
                !column.type.rawValue.uppercased().contains("GENERATED")
            else { return nil }
            ordered.append(column)
        }
        return ordered
    }

    /// Runs a single `INSERT … SELECT` that reports rows done as it goes: when someone observes
    /// progress, `body` gets a condition to add to the SELECT, a function that counts rows and
    /// reports every 10,000. Without an observer there is no per-row cost.
    private func withRowProgress(operation: String, total: Int, _ body: (String?) throws -> Void) throws {
        guard let progress else { return try body(nil) }
        let counter = RowCounter()
        let label = stageLabel
        let function = DatabaseFunction("ostore_row_progress", argumentCount: 0) { _ in
            let done = counter.increment()
            if done % 10_000 == 0 { progress(.rows(stage: label, operation: operation, done: done, total: total)) }
            return 1
        }
        try database.add(function: function)
        defer { try? database.remove(function: function) }
        try body("ostore_row_progress()")
    }

    private struct DependentObject {
        var type: String
        var name: String
        var sql: String
    }

    /// The indexes of the table, and every trigger and view whose SQL names it (a trigger on
    /// another table or a view that reads this one would break the rename otherwise).
    private func dependentObjects(of table: String) throws -> [DependentObject] {
        try database.fetchAll(
            """
            SELECT type, name, tbl_name, sql FROM main.sqlite_schema
            WHERE type IN ('index', 'trigger', 'view') AND sql IS NOT NULL ORDER BY type = 'view', rowid
            """
        ).compactMap { row in
            let object = DependentObject(
                type: try row.decode(at: 0), name: try row.decode(at: 1), sql: try row.decode(at: 3))
            let owner: String = try row.decode(at: 2)
            if owner.lowercased() == table.lowercased() { return object }
            guard object.type != "index" else { return nil }
            let mentions = SQLScanner.tokens(object.sql).contains {
                ($0.kind == .word || $0.kind == .quotedIdentifier) && $0.identifier.lowercased() == table.lowercased()
            }
            return mentions ? object : nil
        }
    }

    /// A row's key columns as `name = literal` pairs: the offending rows of an aborted rebuild are
    /// named so the developer can find them.
    private static func keyText(_ row: Row) throws -> String {
        try row.columnNames.indices.filter { row.columnNames[$0] != "count(*)" }.map { index in
            "\(row.columnNames[index]) = \(try row.decode(DatabaseValue.self, at: index).sqlLiteral)"
        }.joined(separator: ", ")
    }

    /// Rows of the old table the copy's join matches more than once.
    private func duplicatedRows(source: String, key liveTable: TableDefinition) throws -> [String] {
        let keyColumns = liveTable.normalized().primaryKey
        let key =
            keyColumns.isEmpty
            ? "\"old\".rowid" : keyColumns.map { "\"old\"." + quoteIdentifier($0) }.joined(separator: ", ")
        return try database.fetchAll(
            SQL(sql: "SELECT \(key), count(*) \(source) GROUP BY \(key) HAVING count(*) > 1 LIMIT 20")
        ).map { "duplicated: \(try Self.keyText($0)) (\(try $0.decode(Int.self, at: $0.count - 1)) matches)" }
    }

    private func offendingRows(old: String, new: String, key liveTable: TableDefinition) throws -> [String] {
        let keyColumns = liveTable.normalized().primaryKey
        let key = keyColumns.isEmpty ? "rowid" : keyColumns.map(quoteIdentifier).joined(separator: ", ")
        let missing = try database.fetchAll(
            SQL(
                sql:
                    "SELECT \(key) FROM \(quoteIdentifier(old)) EXCEPT SELECT \(key) FROM \(quoteIdentifier(new)) LIMIT 20"
            ))
        let duplicated = try database.fetchAll(
            SQL(
                sql: "SELECT \(key), count(*) FROM \(quoteIdentifier(new)) GROUP BY \(key) HAVING count(*) > 1 LIMIT 20"
            ))
        return try missing.map { "lost: \(try Self.keyText($0))" }
            + duplicated.map { "duplicated: \(try Self.keyText($0))" }
    }
}

/// Counts rows for progress reports.
///
/// `@unchecked Sendable`: SQLite calls the counting function only on the thread that runs the
/// statement, one call at a time, and the count is read only by those calls, so it is never
/// accessed concurrently; the type is Sendable only because function bodies must be.
private final class RowCounter: @unchecked Sendable {
    private var count = 0

    func increment() -> Int {
        count += 1
        return count
    }
}
