import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// Makes sure every committed row change of a synced table is in the change log, even when the
/// TEMP triggers did not see it:
///
/// - **Writes by another program** (the `sqlite3` shell, another tool) fire no TEMP trigger.
///   Permanent triggers in the user's file, written in built-in SQL only so they run everywhere,
///   note the key of every row written on a connection without the metadatabase attached in
///   `ostore_unlogged` (a permanent trigger cannot see TEMP triggers, but it can see
///   `pragma_database_list`; ``ChangeLog/open(_:migrator:)`` attaches and installs tracking together).
///   Asking `pragma_database_list` costs about as much as the write itself, so a tracked
///   connection answers first, through the built-in `sqlite_compileoption_used()`, which it
///   overrides for one name no SQLite build uses (``trackingProbeName``); in every other program
///   the built-in answers 0 and the pragma decides.
/// - **Two files, one commit.** A transaction that writes `main` and the metadatabase commits
///   each file on its own (SQLite's ATTACH documentation); a process killed between the two
///   leaves a data change with no log entry. Each transaction with tracked writes also stores
///   the log's newest sequence number, as of its first tracked row, in `main.ostore_log_watermark`,
///   in the user's file (a later row writes it again when a ROLLBACK TO has undone it, which the
///   journal's rowids tell: see `ostore_watermark_after` in CChangeTracking); a watermark ahead of
///   the log at open means a lost log transaction.
///
/// Reconciliation records what is missing: each noted row is recorded as inserted (with its
/// current values when pushed) or deleted, and after a lost log transaction every row of every
/// synced table is recorded again and rows the log thinks exist but do not are recorded as
/// deleted. Re-recording a row can only make a value this store holds win again; it never
/// loses one. See <https://www.sqlite.org/lang_attach.html>.
enum LogCoverage {
    static let unloggedTable = "ostore_unlogged"
    static let watermarkTable = "ostore_log_watermark"
    /// Rows and columns migration stages asked to record (``MigrationContext/recordChanges(in:columns:where:)``):
    /// `columnName` empty for a whole row, else one column's update.
    static let stageChangesTable = "ostore_stage_changes"

    /// The name the permanent triggers pass to `sqlite_compileoption_used()`: no SQLite build has
    /// such an option, so the built-in answers 0, except on a connection with tracking installed.
    static let trackingProbeName = "ostore:change-tracking"

    /// Makes `sqlite_compileoption_used(trackingProbeName)` answer 1 on this connection (every
    /// other name still gets the built-in's answer). ``ChangeTracker/install(on:schema:clock:)``
    /// calls it with the TEMP triggers, so it answers 1 only where those triggers record writes.
    static func installTrackingProbe(on db: Database) throws {
        try db.installChangeTrackingProbe(named: trackingProbeName)
    }

    /// Creates the bookkeeping tables and the permanent triggers in the user's file, replacing
    /// permanent triggers written differently by an earlier version.
    static func installPermanentTriggers(on db: Database, schema: SchemaSnapshot) throws {
        try db.transaction(.immediate) { db in
            try createBookkeepingTables(on: db)
            var stored: [String: String] = [:]
            for row in try db.fetchAll(
                "SELECT name, sql FROM main.sqlite_schema WHERE type = 'trigger' AND name LIKE 'ostore_unlogged_%'")
            {
                stored[try row.decode(at: 0)] = try row.decode(at: 1)
            }
            for table in schema.tables where table.sync == .synced {
                for event in ["insert", "update", "delete"] {
                    let name = "ostore_unlogged_" + table.name + "_" + event
                    let sql = permanentTriggerSQL(name: name, table: table, event: event)
                    guard stored[name] != sql else { continue }
                    try db.execute(sql: "DROP TRIGGER IF EXISTS main.\(quoteIdentifier(name))")
                    try db.execute(sql: sql)
                }
            }
        }
    }

    /// The tables of noted rows and the watermark, in the user's file, unless they exist: also before
    /// the first open's triggers, for a migration stage that records rows (``MigrationContext/recordChanges(in:columns:where:)``).
    static func createBookkeepingTables(on db: Database) throws {
        try db.executeScript(
            """
            CREATE TABLE IF NOT EXISTS main.\(unloggedTable) (
                tableName TEXT NOT NULL, pk ANY NOT NULL, PRIMARY KEY (tableName, pk)) STRICT, WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS main.\(stageChangesTable) (
                tableName TEXT NOT NULL, pk ANY NOT NULL, columnName TEXT NOT NULL,
                PRIMARY KEY (tableName, pk, columnName)) STRICT, WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS main.\(watermarkTable) (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER) STRICT;
            INSERT OR IGNORE INTO main.\(watermarkTable) (id, seq) VALUES (1, NULL);
            """)
    }

    /// The rows noted as written outside the store, each as `quote(tableName),quote(pk)`; nil when
    /// the store never installed its permanent triggers.
    static func notedRows(_ db: Database) throws -> [String]? {
        guard try db.tableExists(unloggedTable) else { return nil }
        return try db.fetchAll(String.self, "SELECT quote(tableName) || ',' || quote(pk) FROM main.ostore_unlogged")
    }

    /// Forgets the rows noted since `before` (``notedRows(_:)``) was read: a migration stage run on a
    /// connection without the metadatabase looks to the permanent triggers like another program's
    /// writes, but every device runs the same stage, so its writes are not user edits.
    static func forgetRowsNoted(_ db: Database, since before: [String]?) throws {
        guard let before, try db.tableExists(unloggedTable) else { return }
        guard !before.isEmpty else { return try db.execute("DELETE FROM main.ostore_unlogged") }
        let keys = String(decoding: try JSONEncoder().encode(before), as: UTF8.self)
        try db.execute(
            """
            DELETE FROM main.ostore_unlogged
            WHERE quote(tableName) || ',' || quote(pk) NOT IN (SELECT value FROM json_each(\(keys)))
            """)
    }

    /// A permanent trigger, exactly as `sqlite_schema` keeps it (so a changed definition is
    /// noticed). It notes the row unless the connection records it: the tracking probe answers
    /// that at the cost of one function call where tracking is installed; elsewhere the built-in
    /// answers 0 and `pragma_database_list` decides, as it did alone before (tracking is only ever
    /// installed with the metadatabase attached, so the two together decide exactly as it did).
    static func permanentTriggerSQL(name: String, table: TableDefinition, event: String) -> String {
        let keys = ChangeTracker.keyColumns(of: table)
        let tableLiteral = DatabaseValue.text(table.name).sqlLiteral
        var body =
            "INSERT OR REPLACE INTO \(unloggedTable) (tableName, pk) VALUES "
            + "(\(tableLiteral), \(ChangeTracker.keyExpression(keys, row: event == "delete" ? "OLD" : "NEW")));"
        if event == "update" {
            body +=
                " INSERT OR REPLACE INTO \(unloggedTable) (tableName, pk) VALUES "
                + "(\(tableLiteral), \(ChangeTracker.keyExpression(keys, row: "OLD")));"
        }
        return """
            CREATE TRIGGER \(quoteIdentifier(name))
            AFTER \(event.uppercased()) ON \(quoteIdentifier(table.name))
            WHEN NOT sqlite_compileoption_used(\(DatabaseValue.text(trackingProbeName).sqlLiteral))
            AND NOT EXISTS (SELECT 1 FROM pragma_database_list WHERE name = \(DatabaseValue.text(Metadatabase.schemaName).sqlLiteral))
            BEGIN \(body) END
            """
    }
}

/// What ``ChangeLog/reconcileCoverage(_:forceRescan:)`` found and recorded.
package struct CoverageReport: Sendable, Hashable {
    /// Rows written outside the store (no TEMP triggers) that were recorded now.
    package var unloggedRows = 0
    /// Rows and columns migration stages asked to record (``MigrationContext/recordChanges(in:columns:where:)``),
    /// recorded now.
    package var stageChanges = 0
    /// Whether the log had lost a transaction (or the metadatabase was new) and every row was
    /// recorded again.
    package var rescanned = false
    /// Rows recorded by the rescan (re-recorded or recorded as deleted).
    package var rescannedRows = 0
}

extension ChangeLog {
    /// Records in the log every committed row change it does not cover: rows written by other
    /// programs, and after a lost log transaction (or a recreated metadatabase, or `forceRescan`,
    /// which `ostore rescan` uses) every row. ``open(_:migrator:)`` runs it.
    @discardableResult
    package func reconcileCoverage(_ db: Database, forceRescan: Bool = false) throws -> CoverageReport {
        try db.withoutRecordingChanges { db in
            try db.transaction(.immediate) { db in
                var report = CoverageReport()
                let watermark = try db.fetchValue(Int64.self, "SELECT seq FROM main.ostore_log_watermark WHERE id = 1")
                let logged = try newestSequence(db)
                let lostLogTransaction = (watermark ?? 0) > (logged ?? 0)
                let rescan =
                    forceRescan || lostLogTransaction
                    || (identity.state == .metadatabaseRecreated && logged == nil)
                if rescan {
                    report.rescanned = true
                    // The rescan reads which rows the log believes exist from the keyed log.
                    try ChangeJournal.fold(db)
                    // With the metadatabase lost, when the rows were last written is unknown: they
                    // are recorded as the oldest possible changes, so a sync uploads the rows no
                    // one else has and every newer version elsewhere wins (a stale copy must never
                    // overwrite what other devices wrote meanwhile). Rows changed after a lost log
                    // commit are new, and get the current clock.
                    let freshlyRecreated = identity.state == .metadatabaseRecreated && logged == nil && !forceRescan
                    report.rescannedRows = try rescanAll(db, clock: freshlyRecreated ? .zero : clock.now())
                    try db.execute("DELETE FROM main.ostore_unlogged")
                } else {
                    report.unloggedRows = try recordUnlogged(db)
                }
                // After a rescan too: its rows may carry the oldest clock, and what a stage decided
                // is this device's newest change.
                report.stageChanges = try recordStageChanges(db)
                if report.rescanned || report.unloggedRows > 0 || report.stageChanges > 0 {
                    try Self.markWholeOrphanSearch(db)
                }
                try db.execute(
                    "UPDATE main.ostore_log_watermark SET seq = \(try newestSequence(db)) WHERE id = 1")
                return report
            }
        }
    }

    /// Whether the log covers every committed change: nothing written outside the store waits,
    /// nothing a migration stage asked to record, and the watermark in the user's file is not ahead of the log.
    package func coversEveryChange(_ db: Database) throws -> Bool {
        let unlogged = try db.fetchValue(Int.self, "SELECT count(*) FROM main.ostore_unlogged") ?? 0
        let watermark = try db.fetchValue(Int64.self, "SELECT seq FROM main.ostore_log_watermark WHERE id = 1") ?? 0
        let logged = try newestSequence(db) ?? 0
        let staged = try Self.stageChangesWaiting(db)
        return unlogged == 0 && staged == 0 && watermark <= logged
    }

    /// Rows and columns migration stages asked to record that the log has not recorded yet.
    static func stageChangesWaiting(_ db: Database) throws -> Int {
        guard try db.tableExists(LogCoverage.stageChangesTable) else { return 0 }
        return try db.fetchValue(Int.self, "SELECT count(*) FROM main.ostore_stage_changes") ?? 0
    }

    /// The newest place in the queue, over the journal and the keyed log (a fold leaves it as it is).
    private func newestSequence(_ db: Database) throws -> Int64? {
        try ChangeJournal.newestSequence(db)
    }

    private func recordUnlogged(_ db: Database) throws -> Int {
        let rows = try db.fetchAll("SELECT tableName, pk FROM main.ostore_unlogged")
        for row in rows {
            let key: DatabaseValue = try row.decode(at: 1)
            guard let noted = try notedRow(try row.decode(at: 0), key: key, db) else { continue }
            try recordLocal(db, table: noted.table, key: key, entry: noted.exists ? .creation : .deletion)
        }
        try db.execute("DELETE FROM main.ostore_unlogged")
        return rows.count
    }

    /// The synced table a noted row belongs to and whether the row is there; nil for a table this
    /// schema does not sync.
    private func notedRow(_ tableName: String, key: DatabaseValue, _ db: Database) throws -> (
        table: String, exists: Bool
    )? {
        guard let table = schema.table(named: tableName), table.sync == .synced else { return nil }
        let keyColumns = ChangeTracker.keyColumns(of: table)
        let keyValues = try LoggedKey.values(key, columnCount: keyColumns.count)
        let exists = try db.fetchOne(Self.rowSQL("SELECT 1 FROM", table.name, keyColumns, keyValues, set: [:])) != nil
        return (table.name, exists)
    }

    /// Records what migration stages asked to: a whole row as inserted, or as deleted if it is gone;
    /// a column as updated, if its row is still there. The stages ran before this open installed
    /// the triggers, so their writes were not recorded otherwise.
    private func recordStageChanges(_ db: Database) throws -> Int {
        guard try db.tableExists(LogCoverage.stageChangesTable) else { return 0 }
        let rows = try db.fetchAll("SELECT tableName, pk, columnName FROM main.ostore_stage_changes")
        guard !rows.isEmpty else { return 0 }
        var recorded = 0
        for row in rows {
            let key: DatabaseValue = try row.decode(at: 1)
            // A stage notes a whole row with no column name.
            let column: String = try row.decode(at: 2)
            let wholeRow = column.isEmpty
            guard let noted = try notedRow(try row.decode(at: 0), key: key, db), noted.exists || wholeRow
            else { continue }
            try recordLocal(
                db, table: noted.table, key: key,
                entry: wholeRow ? (noted.exists ? .creation : .deletion) : .column(column))
            recorded += 1
        }
        try db.execute("DELETE FROM main.ostore_stage_changes")
        return recorded
    }

    /// Records every row of every synced table as inserted now, and every row the log believes
    /// exists but the table lacks as deleted.
    private func rescanAll(_ db: Database, clock: ChangeClock) throws -> Int {
        var recorded = 0
        for table in schema.tables where table.sync == .synced {
            let keyColumns = ChangeTracker.keyColumns(of: table)
            let key = ChangeTracker.keyExpression(keyColumns, row: "t")
            let tableID = try trackedTableID(table.name, db)
            let rows = try db.fetchAll(
                SQL(sql: "SELECT \(key) FROM main.\(quoteIdentifier(table.name)) AS t"))
            for row in rows {
                try recordLocal(db, tableID: tableID, key: try row.decode(at: 0), entry: .creation, clock: clock)
                recorded += 1
            }
            let vanished = try db.fetchAll(
                SQL(
                    sql: """
                        SELECT c.pk FROM ostore_meta.ostore_changes AS c
                        WHERE c.tableID = ? AND c.columnName = \(LoggedColumn.creation.sqlLiteral)
                          AND NOT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(table.name)) AS t WHERE \(key) = c.pk)
                          AND NOT EXISTS (SELECT 1 FROM ostore_meta.ostore_changes AS d
                                          WHERE d.tableID = c.tableID AND d.pk = c.pk
                                            AND d.columnName = \(LoggedColumn.deletion.sqlLiteral)
                                            AND d.clock > c.clock)
                        """, arguments: [.integer(Int64(tableID))]))
            for row in vanished {
                try recordLocal(db, tableID: tableID, key: try row.decode(at: 0), entry: .deletion, clock: clock)
                recorded += 1
            }
        }
        return recorded
    }

    private func recordLocal(_ db: Database, table: String, key: DatabaseValue, entry: LoggedColumn) throws {
        try recordLocal(db, tableID: try trackedTableID(table, db), key: key, entry: entry, clock: clock.now())
    }

    /// Appended to the journal, as the triggers record a change.
    private func recordLocal(
        _ db: Database, tableID: Int, key: DatabaseValue, entry: LoggedColumn, clock: ChangeClock
    ) throws {
        try db.cachedStatement(Self.recordLocalSQL).run(
            binding: [.integer(Int64(tableID)), key, .text(entry.stored), .integer(clock.packed)])
    }

    private static let recordLocalSQL = ChangeJournal.appendSQL(
        tableID: "?1", key: "?2", column: "?3", clock: "?4")
}
