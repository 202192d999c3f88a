import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// Installs the change log's TEMP triggers on a connection: after INSERT, UPDATE and DELETE on
/// every synced table of a schema, they append to the change journal in the attached metadatabase
/// (only TEMP triggers may write into another database; ``ChangeJournal`` folds it into the keyed
/// log before the log is read). An UPDATE records only the columns whose values changed
/// (`IS NOT`, so NULLs compare), one trigger per column (`AFTER UPDATE OF` it, so a statement
/// compiles in only the columns it sets); a primary-key change is a delete of the old key and an
/// insert of the new (a trigger of its own, `OF` the key columns). Triggers check the
/// connection's recording switch, so migration stages and applied remote changes are not recorded.
///
/// ```swift
/// try ChangeTracker.install(on: db, schema: try RemindersSchemaV2.snapshot(), clock: clock)
/// try db.execute("INSERT INTO reminders (id, title, listID) VALUES (\(id), \("Milk"), \(listID))")
/// ```
///
/// See <https://www.sqlite.org/lang_createtrigger.html> ("TEMP triggers … may refer to other schemas").
enum ChangeTracker {
    static let triggerPrefix = "ostore_track_"

    /// Replaces this connection's tracking triggers with ones for `schema`'s synced tables.
    /// The metadatabase must be attached (``Metadatabase/attach(to:)``).
    static func install(on db: Database, schema: SchemaSnapshot, clock: HybridLogicalClock) throws {
        try schema.validateRowIdentityForSync()
        try installFunctions(on: db, clock: clock)
        try LogCoverage.installPermanentTriggers(on: db, schema: schema)
        try db.transaction(.immediate) { db in
            let existing = try db.fetchAll(
                String.self,
                "SELECT name FROM temp.sqlite_schema WHERE type = 'trigger' AND name LIKE \(triggerPrefix + "%")")
            for name in existing { try db.execute(sql: "DROP TRIGGER IF EXISTS temp.\(quoteIdentifier(name))") }
            for table in schema.tables where table.sync == .synced {
                try db.execute(
                    "INSERT OR IGNORE INTO \(identifier: Metadatabase.schemaName).ostore_tables (name) VALUES (\(table.name))"
                )
                let tableID =
                    try db.fetchValue(
                        Int.self,
                        "SELECT id FROM \(identifier: Metadatabase.schemaName).ostore_tables WHERE name = \(table.name)"
                    ) ?? 0
                for sql in triggerSQL(for: table, tableID: tableID) { try db.execute(sql: sql) }
            }
        }
        // Only now that the TEMP triggers record this connection's writes may the permanent ones
        // skip them.
        try LogCoverage.installTrackingProbe(on: db)
    }

    /// Registers `ostore_recording()`, `ostore_clock()`, `ostore_observe(table, key)` and
    /// `ostore_watermark_after(entry)`, which the triggers call on
    /// every row. They are answered in C from state the connection's recording switch keeps
    /// current; only the clock, and the keys while someone observes commits, reach Swift.
    static func installFunctions(on db: Database, clock: HybridLogicalClock) throws {
        try db.installChangeTrackingFunctions(
            clockSource: (Metadatabase.schemaName, ClockRegistry.newestSQL), watermarkWriterSQL: watermarkWriterSQL
        ) { floor in
            if floor > 0, let newest = ChangeClock(packed: floor) { clock.catchUp(to: newest) }
            return clock.now().packed
        }
    }

    /// What `ostore_watermark_after` runs to write the watermark: the newest place in the queue,
    /// into the user's file (``LogCoverage``).
    static let watermarkWriterSQL =
        "UPDATE main.\(LogCoverage.watermarkTable) SET seq = "
        + ChangeJournal.newestSequenceSQL(meta: quoteIdentifier(Metadatabase.schemaName)) + " WHERE id = 1"

    /// The primary-key columns of a table, in key order.
    static func keyColumns(of table: TableDefinition) -> [String] {
        let normal = table.normalized()
        return normal.primaryKey.compactMap { key in table.columns.first { $0.name.uppercased() == key }?.name }
    }

    /// The key as stored in the log: the value itself for a one-column key; for a composite key,
    /// the columns as SQL literals (`quote()`) joined by commas, decoded by ``LoggedKey``.
    static func keyExpression(_ columns: [String], row: String) -> String {
        guard columns.count > 1 else { return "\(row).\(quoteIdentifier(columns[0]))" }
        return columns.map { "quote(\(row).\(quoteIdentifier($0)))" }.joined(separator: " || ',' || ")
    }

    /// Trigger bodies cannot take bound parameters, so the table number and column names are
    /// written in as literals; they come from the declared schema, never from user data.
    ///
    /// Each entry is one append to the journal (``ChangeJournal``; `… SELECT … WHERE` a column
    /// changed for generated columns): no index and no conflict clause, so the conflict policy of
    /// the user's statement (`UPDATE OR IGNORE`, `OR REPLACE`, …), which SQLite applies to the
    /// trigger's statements too, has nothing to act on. Each statement, and so each changed
    /// column of one UPDATE, takes its own place in the queue.
    static func triggerSQL(for table: TableDefinition, tableID: Int) -> [String] {
        let keys = keyColumns(of: table)
        let newKey = keyExpression(keys, row: "NEW")
        let oldKey = keyExpression(keys, row: "OLD")
        let target = "main.\(quoteIdentifier(table.name))"
        func record(_ key: String, _ column: String) -> String {
            ChangeJournal.appendSQL(
                tableID: "\(tableID)", key: key, column: column, clock: "ostore_clock()")
        }
        func record(_ key: String, _ column: String, where condition: String) -> String {
            ChangeJournal.appendSQL(
                tableID: "\(tableID)", key: key, column: column, clock: "ostore_clock()", where: condition)
        }
        let name = { (event: String) in quoteIdentifier(triggerPrefix + table.name + "_" + event) }
        let keyChanged = "\(newKey) IS NOT \(oldKey)"
        let tableLiteral = DatabaseValue.text(table.name).sqlLiteral
        let observe = { (key: String) in "SELECT ostore_observe(\(tableLiteral), \(key));" }
        // The newest place in the queue (the entry just appended), written into the user's file in
        // the same transaction: if the process dies after `main` commits and before the
        // metadatabase does, the open finds this watermark ahead of the log (see LogCoverage).
        // Once per transaction is enough (any entry of it is ahead of what the metadatabase had
        // committed): `ostore_watermark_after` (CChangeTracking) writes it at the transaction's
        // first tracked row, and again only if a ROLLBACK TO undid it, through a statement of its
        // own (``watermarkWriterSQL``), given the rowid of the entry the trigger just appended.
        let watermarkCall = "SELECT ostore_watermark_after(last_insert_rowid())"
        let watermark = watermarkCall + ";"
        let keyColumnList = keys.map(quoteIdentifier).joined(separator: ", ")
        var triggers = [
            """
            CREATE TEMP TRIGGER \(name("insert")) AFTER INSERT ON \(target) WHEN ostore_recording()
            BEGIN
            \(record(newKey, LoggedColumn.creation.sqlLiteral))
            \(observe(newKey))
            \(watermark)
            END
            """,
            """
            CREATE TEMP TRIGGER \(name("delete")) AFTER DELETE ON \(target) WHEN ostore_recording()
            BEGIN
            \(record(oldKey, LoggedColumn.deletion.sqlLiteral))
            \(observe(oldKey))
            \(watermark)
            END
            """,
            // An UPDATE compiles in only the triggers `OF` a column it sets, so the common one, a
            // value column by key, pays nothing for the key change it does not make.
            """
            CREATE TEMP TRIGGER \(name("update_key")) AFTER UPDATE OF \(keyColumnList) ON \(target)
            WHEN ostore_recording() AND \(keyChanged)
            BEGIN
            \(record(oldKey, LoggedColumn.deletion.sqlLiteral))
            \(record(newKey, LoggedColumn.creation.sqlLiteral))
            \(observe(newKey))
            \(observe(oldKey))
            \(watermark)
            END
            """,
        ]
        var generated: [String] = []
        for (index, column) in table.columns.enumerated() where !keys.contains(column.name) {
            // A generated column is never set, yet changes with the columns it is computed from.
            guard !column.type.rawValue.uppercased().contains("GENERATED") else {
                generated.append(column.name)
                continue
            }
            let quoted = quoteIdentifier(column.name)
            triggers.append(
                """
                CREATE TEMP TRIGGER \(name("update_\(index)")) AFTER UPDATE OF \(quoted) ON \(target)
                WHEN ostore_recording() AND NEW.\(quoted) IS NOT OLD.\(quoted) AND \(newKey) IS \(oldKey)
                BEGIN
                \(record(newKey, DatabaseValue.text(column.name).sqlLiteral))
                \(observe(newKey))
                \(watermark)
                END
                """)
        }
        if !generated.isEmpty {
            // The watermark only after an entry was appended: `last_insert_rowid()` names one of
            // this trigger's entries only then.
            let conditions = generated.map { "NEW.\(quoteIdentifier($0)) IS NOT OLD.\(quoteIdentifier($0))" }
            let changed = zip(generated, conditions).map { column, condition in
                record(newKey, DatabaseValue.text(column).sqlLiteral, where: condition)
            }
            triggers.append(
                """
                CREATE TEMP TRIGGER \(name("update_generated")) AFTER UPDATE ON \(target)
                WHEN ostore_recording() AND \(newKey) IS \(oldKey)
                BEGIN
                \(changed.joined(separator: "\n"))
                \(observe(newKey))
                \(watermarkCall) WHERE \(conditions.joined(separator: " OR "));
                END
                """)
        }
        return triggers
    }
}
