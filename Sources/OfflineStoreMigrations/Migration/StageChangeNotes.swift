import OfflineStoreSQLite

/// While a stage that records its changes runs (``MigrationStage/recordsChanges``), TEMP triggers
/// on the synced tables note each row it inserts or deletes and each column it updates in
/// `main.ostore_stage_changes`, which ``ChangeLog/open(_:migrator:)`` records right after
/// migrating (as ``MigrationContext/recordChanges(in:columns:where:)`` notes chosen rows).
///
/// The stage's writes themselves run with recording off, on every connection: a connection that
/// already tracks (its TEMP triggers installed by an earlier open) and a fresh one, which has no
/// tracking triggers while it migrates, then record the same changes. The triggers live in the
/// stage's transaction and are dropped when its code returns; a rebuilt table gets them again
/// (dropping a table drops its TEMP triggers too). Trigger bodies cannot take bound parameters,
/// so names are written in as literals; they come from the declared schema, never from user data.
/// See <https://www.sqlite.org/lang_createtrigger.html>.
enum StageChangeNotes {
    private static let prefix = "ostore_stage_note_"

    /// Notes writes to `tables` (each as it now is in the database) from now on.
    static func installTriggers(
        on db: Database, tables: [TableDefinition], bookkeeping: any ChangeLogBookkeeping.Type
    ) throws {
        try bookkeeping.createBookkeepingTables(on: db)
        for table in tables {
            for event in ["insert", "update", "delete"] {
                try db.execute(sql: triggerSQL(table: table, event: event, bookkeeping: bookkeeping))
            }
        }
    }

    /// Notes writes to the synced tables of `schema` that the database holds now.
    static func installTriggers(
        on db: Database, syncedTablesOf schema: SchemaSnapshot, bookkeeping: any ChangeLogBookkeeping.Type
    ) throws {
        let live = try SchemaSnapshot(liveDatabase: db)
        let tables = schema.tables.filter { $0.sync == .synced }.compactMap { declared in
            live.table(named: declared.name).flatMap { table in
                if case .table = table.kind { table } else { nil }
            }
        }
        try installTriggers(on: db, tables: tables, bookkeeping: bookkeeping)
    }

    /// Drops every noting trigger this connection has.
    static func removeTriggers(from db: Database) throws {
        let names = try db.fetchAll(
            String.self,
            SQL(
                sql: "SELECT name FROM temp.sqlite_schema WHERE type = 'trigger' AND substr(name, 1, ?) = ?",
                arguments: [.integer(Int64(prefix.count)), .text(prefix)]))
        for name in names { try db.execute(sql: "DROP TRIGGER IF EXISTS temp.\(quoteIdentifier(name))") }
    }

    private static func triggerSQL(
        table: TableDefinition, event: String, bookkeeping: any ChangeLogBookkeeping.Type
    ) -> String {
        let keys = bookkeeping.keyColumns(of: table)
        let newKey = bookkeeping.keyExpression(keys, row: "NEW")
        let oldKey = bookkeeping.keyExpression(keys, row: "OLD")
        let tableLiteral = DatabaseValue.text(table.name).sqlLiteral
        // Unqualified, as trigger bodies must be: no TEMP table has the name, so it is `main`'s.
        let into = "INSERT OR REPLACE INTO \(bookkeeping.stageChangesTable) (tableName, pk, columnName)"
        var body: String
        switch event {
        case "insert": body = "\(into) VALUES (\(tableLiteral), \(newKey), '');"
        case "delete": body = "\(into) VALUES (\(tableLiteral), \(oldKey), '');"
        default:
            // A key change is a delete and an insert; otherwise each column that changed.
            body =
                "\(into) SELECT \(tableLiteral), \(oldKey), '' WHERE \(oldKey) IS NOT \(newKey);"
                + " \(into) SELECT \(tableLiteral), \(newKey), '' WHERE \(oldKey) IS NOT \(newKey);"
            for column in table.columns where !keys.contains(column.name) {
                let quoted = quoteIdentifier(column.name)
                body +=
                    " \(into) SELECT \(tableLiteral), \(newKey), \(DatabaseValue.text(column.name).sqlLiteral)"
                    + " WHERE \(oldKey) IS \(newKey) AND OLD.\(quoted) IS NOT NEW.\(quoted);"
            }
        }
        return """
            CREATE TEMP TRIGGER \(quoteIdentifier(prefix + table.name + "_" + event))
            AFTER \(event.uppercased()) ON main.\(quoteIdentifier(table.name))
            BEGIN \(body) END
            """
    }
}
