import OfflineStoreSQLite

extension MigrationContext {
    /// Records rows of `table` that `condition` selects as changes this device made, pushed on its
    /// next sync like a user's edit: the whole rows, or with `columns` an update of those columns.
    ///
    /// A stage's writes are otherwise not recorded: every device runs the same stage on the same
    /// synced rows (``MigrationStage/recordsChanges``). This is for what a stage decides from this
    /// device's own data, which no other device decides for itself: reminders whose list this
    /// device saw deleted, given a list again. Without it, such a row exists on this device alone.
    ///
    /// Call it after writing the rows; for a whole row whose delete should be pushed, before deleting
    /// it. The rows are noted in the user's file, in the stage's transaction, and recorded when the
    /// change log next opens (``ChangeLog/open(_:migrator:)``, right after migrating), under a clock
    /// newer than any this device has seen: a whole row as inserted with the values it then has, or
    /// as deleted if it is gone; a column as updated, if its row is still there. A whole row records
    /// every column, so that it also overwrites other devices' concurrent edits of the row with an older
    /// clock; record only the columns the stage wrote where the row already existed elsewhere. A row
    /// inserted again under a key deleted elsewhere meets the protocol's known gap (Protocol/README.md,
    /// section 8.5): give a recovered row a new key instead. `table` must be a synced table of the
    /// stage's target schema; `columns`, its non-key columns. Returns the number of rows selected.
    ///
    /// ```swift
    /// let recovered = "recovered-" + list
    /// try context.execute("INSERT INTO remindersLists (id, name) VALUES (\(recovered), 'Recovered list')")
    /// try context.recordChanges(in: "remindersLists", where: "id = \(recovered)")
    /// try context.execute("UPDATE reminders SET listID = \(recovered) WHERE listID = \(list)")
    /// try context.recordChanges(in: "reminders", columns: ["listID"], where: "listID = \(recovered)")
    /// ```
    ///
    /// Relies on SQLite's `INSERT … SELECT` (<https://www.sqlite.org/lang_insert.html>).
    @discardableResult
    public func recordChanges(in table: String, columns: [String] = [], where condition: SQL) throws -> Int {
        guard let definition = targetSchema.table(named: table) else {
            throw MigrationError(
                .misuse, stage: stageLabel, "recordChanges names \(table), which schema \(toVersion) does not declare",
                fix: "name a synced table of the stage's target schema")
        }
        guard definition.sync == .synced else {
            throw MigrationError(
                .misuse, stage: stageLabel, "recordChanges names \(table), which is not synced",
                fix: "only a synced table's rows can be recorded as changes; write local-only tables without it")
        }
        let bookkeeping = try changeLogBookkeeping()
        let keyColumns = bookkeeping.keyColumns(of: definition)
        let declared = try columns.map { name in
            guard let column = definition.columns.first(where: { $0.name.lowercased() == name.lowercased() }),
                !keyColumns.contains(column.name)
            else {
                throw MigrationError(
                    .misuse, stage: stageLabel, "recordChanges names \(table).\(name), which is not a non-key column",
                    fix: "name columns of \(table) other than its primary key; a key change is a delete and an insert")
            }
            return column.name
        }
        try bookkeeping.createBookkeepingTables(on: database)
        let key = bookkeeping.keyExpression(keyColumns, row: "t")
        var selected = 0
        for column in declared.isEmpty ? [""] : declared {
            let note =
                SQL(
                    sql: """
                        INSERT OR REPLACE INTO main.\(bookkeeping.stageChangesTable) (tableName, pk, columnName)
                        SELECT ?, \(key), ? FROM main.\(quoteIdentifier(definition.name)) AS t WHERE\u{20}
                        """,
                    arguments: [.text(definition.name), .text(column)]) + condition
            try run(note)
            selected = database.changesCount
        }
        return selected
    }
}
