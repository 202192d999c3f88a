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
        let newest = try ChangeJournal.newestKeyedEntry(db)
        let log = "\(quoteIdentifier(Metadatabase.schemaName)).ostore_changes"
        // Read once for the page: most stores' stash is empty, and a page may name many rows.
        var stash = try StashedRows(db)
        // Per table the page names: its key columns, its number in the log, its queue reader.
        var tables: [String: (keyColumns: [String], id: Int, pending: PendingTable)?] = [:]
        for row in leaving.rows {
            let known =
                try tables[row.table.lowercased()]
                ?? schema.table(named: row.table).flatMap { definition in
                    guard definition.sync == .synced else { return nil }
                    return (
                        ChangeTracker.keyColumns(of: definition), try trackedTableID(definition.name, db),
                        try PendingTable(definition, db)
                    )
                }
            tables[row.table.lowercased()] = known
            guard let table = known else {
                // A table of a newer schema: only the stash can hold its rows.
                removed += try stash.forget(table: row.table, db) { $0.primaryKey == row.primaryKey } ? 1 : 0
                continue
            }
            let name = table.pending.definition.name
            let keyValues: [DatabaseValue]
            do {
                keyValues = try Self.keyValues(of: row.primaryKey, keyColumns: table.keyColumns, table: name)
            } catch {
                // The server named a row by another key than the table's: nothing here is that row.
                db.configuration.logHandler.log(
                    .warning, "a pull named a row that left the scope by a key this table does not have; kept it",
                    metadata: ["path": db.path, "table": name, "reason": "\(error)"])
                continue
            }
            let key = Self.loggedKey(keyValues)
            // Read before the row and the stash lose what they hold: an insert's or update's values.
            let unpushed = try db.cachedStatement(
                """
                SELECT c.seq, c.tableID, t.name, c.pk, c.columnName, c.clock
                FROM \(log) AS c JOIN \(quoteIdentifier(Metadatabase.schemaName)).ostore_tables AS t ON t.id = c.tableID
                WHERE c.tableID = ?1 AND c.pk = ?2 AND c.site = 0 AND c.seq > ?3 ORDER BY c.seq
                """)
            defer { unpushed.reset() }
            try unpushed.bind(.integer(Int64(table.id)), toParameter: 1)
            try unpushed.bind(key, toParameter: 2)
            try unpushed.bind(.integer(pushed), toParameter: 3)
            while try unpushed.step(arguments: nil) {
                if let entry = try table.pending.entry(unpushed, in: log, db) { try leaving.keepUnpushed(entry, db) }
            }
            // One text per table: cached, since a download that replaces the store's rows may
            // remove most of them.
            let delete = Self.rowSQL("DELETE FROM", name, table.keyColumns, keyValues, set: [:])
            try db.cachedStatement(delete.text).run(binding: delete.arguments)
            let wasHeld = db.changesCount > 0
            // Keys compared as the apply compares them, in the table's key order.
            let wasStashed = try stash.forget(table: name, db) { change in
                (try? Self.keyValues(of: change, keyColumns: table.keyColumns, table: name)) == keyValues
            }
            try db.cachedStatement("DELETE FROM \(log) WHERE tableID = ?1 AND pk = ?2")
                .run(binding: [.integer(Int64(table.id)), key])
            guard wasHeld || wasStashed || db.changesCount > 0 else { continue }
            removed += 1
            if wasHeld {
                asDeletes.append(
                    IncomingChange(
                        table: name, primaryKey: Dictionary(uniqueKeysWithValues: zip(table.keyColumns, keyValues)),
                        operation: .delete, columns: [:], clock: .zero, siteID: identity.siteID))
            }
        }
        try ChangeJournal.holdNewestPlace(newest, site: try siteNumber(identity.siteID, db), db)
        return (removed, asDeletes)
    }
}

/// The stash's changes, read once for the rows of a page that leave the scope, each taken out of
/// the stash (and of this reading) when its row leaves.
private struct StashedRows {
    private var changes: [(id: Int64, change: IncomingChange)] = []

    init(_ db: Database) throws {
        for row in try db.fetchAll("SELECT id, change FROM \(identifier: Metadatabase.schemaName).ostore_stash") {
            let json: String = try row.decode(at: 1)
            guard let change = try? JSONDecoder().decode(IncomingChange.self, from: Data(json.utf8)) else { continue }
            changes.append((try row.decode(at: 0), change))
        }
    }

    /// Deletes what the stash holds of one row of `table` (named in any case), the changes
    /// `isRow` says are the row's: its changes waiting for a schema that knows them or for their
    /// row, and the row itself waiting for its parent. Returns whether anything was deleted.
    mutating func forget(table: String, _ db: Database, where isRow: (IncomingChange) -> Bool) throws -> Bool {
        let name = table.lowercased()
        let forgotten = changes.filter { $0.change.table.lowercased() == name && isRow($0.change) }
        guard !forgotten.isEmpty else { return false }
        for (id, _) in forgotten {
            try db.execute("DELETE FROM \(identifier: Metadatabase.schemaName).ostore_stash WHERE id = \(id)")
        }
        let ids = Set(forgotten.map(\.id))
        changes.removeAll { ids.contains($0.id) }
        return true
    }
}
