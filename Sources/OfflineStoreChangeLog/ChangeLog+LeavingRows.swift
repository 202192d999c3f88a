import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Removes the rows of `leaving` (``LeavingRows``) inside the apply's transaction, with the
    /// journal folded and nothing recorded: each row, every version the log holds of it, and what
    /// the stash holds of it; its changes not pushed yet are handed to `keepUnpushed` first.
    /// Returns the rows removed as deletes, for the orphan search only: a child of a removed row
    /// that stays in the scope is left without its parent, which the log never saw deleted, so
    /// the search stashes it until its parent comes back (ChangeLog+OrphanRemoval.swift), and never
    /// deletes it. A row this store does not hold changes nothing.
    func removeLeavingRows(_ leaving: LeavingRows, _ db: Database) throws -> (removed: Int, asDeletes: [IncomingChange])
    {
        var removed = 0
        var asDeletes: [IncomingChange] = []
        let pushed = try pushedSequence(db)
        let log = "\(quoteIdentifier(Metadatabase.schemaName)).ostore_changes"
        for row in leaving.rows {
            guard let definition = schema.table(named: row.table), definition.sync == .synced else {
                // A table of a newer schema: only the stash can hold its rows.
                removed += try forgetStashed(row, key: nil, db) ? 1 : 0
                continue
            }
            let keyColumns = ChangeTracker.keyColumns(of: definition)
            let keyValues: [DatabaseValue]
            do {
                keyValues = try Self.keyValues(
                    of: IncomingChange(
                        table: definition.name, primaryKey: row.primaryKey, operation: .delete, columns: [:],
                        clock: .zero, siteID: identity.siteID),
                    keyColumns: keyColumns, table: definition.name)
            } catch {
                // The server named a row by another key than the table's: nothing here is that row.
                db.configuration.logHandler.log(
                    .warning, "a pull named a row that left the scope by a key this table does not have; kept it",
                    metadata: ["path": db.path, "table": definition.name, "reason": "\(error)"])
                continue
            }
            let key = Self.loggedKey(keyValues)
            let tableID = try trackedTableID(definition.name, db)
            // Read before the row and the stash lose what they hold: an insert's or update's values.
            let unpushed = try db.cachedStatement(
                """
                SELECT c.seq, c.tableID, t.name, c.pk, c.columnName, c.clock
                FROM \(log) AS c JOIN \(quoteIdentifier(Metadatabase.schemaName)).ostore_tables AS t ON t.id = c.tableID
                WHERE c.tableID = ?1 AND c.pk = ?2 AND c.site = 0 AND c.seq > ?3 ORDER BY c.seq
                """)
            defer { unpushed.reset() }
            try unpushed.bind(.integer(Int64(tableID)), toParameter: 1)
            try unpushed.bind(key, toParameter: 2)
            try unpushed.bind(.integer(pushed), toParameter: 3)
            let table = try PendingTable(definition, db)
            while try unpushed.step(arguments: nil) {
                if let entry = try table.entry(unpushed, in: log, db) { try leaving.keepUnpushed(entry, db) }
            }
            try db.execute(Self.rowSQL("DELETE FROM", definition.name, keyColumns, keyValues, set: [:]))
            let wasHeld = db.changesCount > 0
            let wasStashed = try forgetStashed(row, key: (keyColumns, keyValues), db)
            try db.execute(
                SQL(
                    sql: "DELETE FROM \(log) WHERE tableID = ? AND pk = ?",
                    arguments: [.integer(Int64(tableID)), key]))
            guard wasHeld || wasStashed || db.changesCount > 0 else { continue }
            removed += 1
            if wasHeld {
                asDeletes.append(
                    IncomingChange(
                        table: definition.name,
                        primaryKey: Dictionary(uniqueKeysWithValues: zip(keyColumns, keyValues)), operation: .delete,
                        columns: [:], clock: .zero, siteID: identity.siteID))
            }
        }
        return (removed, asDeletes)
    }

    /// Deletes what the stash holds of `row`: its changes waiting for a schema that knows them or
    /// for their row, and the row itself waiting for its parent. `key`: the table's key columns and
    /// the row's values in their order, to compare keys as the apply does; nil for a table this
    /// schema does not know, whose keys are compared as the server gave them. Returns whether
    /// anything was deleted.
    private func forgetStashed(
        _ row: LeavingRow, key: (columns: [String], values: [DatabaseValue])?, _ db: Database
    ) throws -> Bool {
        let stashed = try db.fetchAll(
            SQL(
                sql: "SELECT id, change FROM \(quoteIdentifier(Metadatabase.schemaName)).ostore_stash "
                    + "WHERE tableName = ? COLLATE NOCASE",
                arguments: [.text(row.table)]))
        var forgotten = false
        for stash in stashed {
            let json: String = try stash.decode(at: 1)
            guard let change = try? JSONDecoder().decode(IncomingChange.self, from: Data(json.utf8)) else { continue }
            let isRow: Bool
            if let key {
                isRow = (try? Self.keyValues(of: change, keyColumns: key.columns, table: row.table)) == key.values
            } else {
                isRow = change.primaryKey == row.primaryKey
            }
            guard isRow else { continue }
            let id: Int64 = try stash.decode(at: 0)
            try db.execute("DELETE FROM ostore_meta.ostore_stash WHERE id = \(id)")
            forgotten = true
        }
        return forgotten
    }
}
