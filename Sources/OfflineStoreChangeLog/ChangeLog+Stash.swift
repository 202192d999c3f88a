import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// How many changes wait in the stash.
    func stashCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") ?? 0
    }

    /// Whether the stash holds the row of `target` with these key values, waiting for its parent.
    func waitsInStash(
        _ target: AppliedTable, _ keyValues: [DatabaseValue], _ lookups: ApplyLookups, _ db: Database
    ) throws -> Bool {
        try lookups.waitingKeys(of: target.definition.name) {
            Set(try WaitingRows.of(target.definition.name, keyColumns: target.keyColumns, db).keys)
        }.contains(keyValues)
    }

    /// Keeps `change` in the stash, with why it waits, to be applied again by ``applyStash(_:)``.
    func stash(_ change: IncomingChange, reason: String, _ db: Database) throws {
        let json = String(decoding: try JSONEncoder().encode(change), as: UTF8.self)
        try db.execute(
            "INSERT INTO ostore_meta.ostore_stash (tableName, reason, change) VALUES (\(change.table), \(reason), \(json))"
        )
    }

    /// Applies what the stash holds that this schema (or the rows now present) can take; what still
    /// cannot be applied goes back to the stash. Run after every migration.
    package func applyStash(_ db: Database) throws -> ApplyOutcome {
        // An empty stash (the common case, at every open) takes no write lock.
        guard try db.fetchValue(Bool.self, "SELECT EXISTS (SELECT 1 FROM ostore_meta.ostore_stash)") == true else {
            return ApplyOutcome()
        }
        // Emptied and applied in one transaction: a retry that fails leaves the stash as it was.
        // The transaction opens inside the scope where foreign key actions are off (SQLite honours
        // that pragma only outside a transaction), so no cascade changes rows behind the log.
        return try db.withoutRecordingChanges { db in
            try withoutForeignKeyActions(db) { foreignKeys in
                try Self.wholeThenChangeByChange(db) { savepointEach in
                    try db.transaction(.immediate) { db in
                        let rows = try db.fetchAll("SELECT id, change FROM ostore_meta.ostore_stash ORDER BY id")
                        guard !rows.isEmpty else { return ApplyOutcome() }
                        var changes: [IncomingChange] = []
                        for row in rows {
                            let json: String = try row.decode(at: 1)
                            changes.append(try JSONDecoder().decode(IncomingChange.self, from: Data(json.utf8)))
                        }
                        try db.execute("DELETE FROM ostore_meta.ostore_stash")
                        let batch = prepare(changes)
                        var outcome = try applyInTransaction(
                            batch, db, foreignKeys: foreignKeys, savepointEach: savepointEach)
                        try requeueLocalEntries(ofRowsBack: batch, outcome.refused, db)
                        outcome.stashed = try stashCount(db)
                        return outcome
                    }
                }
            }
        }
    }
}
