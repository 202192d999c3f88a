import OfflineStoreSQLite

/// A row a committed transaction changed in a synced table.
public struct CommittedChange: Sendable, Hashable {
    public var table: String
    /// The row's key, by column name.
    public var primaryKey: [String: DatabaseValue]
}

extension ChangeLog {
    /// Calls `handler` each time a transaction on this connection commits changes to synced
    /// tables, with the rows it changed (each once). Daemons use it to sync soon after a write.
    ///
    /// The handler runs inside SQLite's commit hook, on the writing thread, just before the
    /// commit completes: it must not use the connection (hand the keys to another queue). It uses
    /// the connection's commit and rollback hooks, replacing any set with
    /// ``Database/setCommitHook(_:)``. Writes undone by `ROLLBACK TO` a savepoint may still be
    /// reported with the transaction; changes applied from other sites are not reported.
    ///
    /// ```swift
    /// try log.observeCommits(on: db) { changes in syncQueue.async { scheduleSync(changes) } }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/commit_hook.html>.
    public func observeCommits(on db: Database, _ handler: @escaping @Sendable ([CommittedChange]) -> Void) {
        let recording = db.changeRecording
        let schema = schema
        recording.observedKeys = []
        db.setCommitHook {
            let keys = recording.observedKeys ?? []
            recording.observedKeys = []
            guard !keys.isEmpty else { return true }
            var seen = Set<CommittedChange>()
            var changes: [CommittedChange] = []
            for (tableName, key) in keys {
                guard let table = schema.table(named: tableName) else { continue }
                let columns = ChangeTracker.keyColumns(of: table)
                guard let values = try? LoggedKey.values(key, columnCount: columns.count) else { continue }
                let change = CommittedChange(
                    table: table.name, primaryKey: Dictionary(uniqueKeysWithValues: zip(columns, values)))
                if seen.insert(change).inserted { changes.append(change) }
            }
            handler(changes)
            return true
        }
        db.setRollbackHook { recording.observedKeys = [] }
    }

    /// Stops calling the handler set with ``observeCommits(on:_:)``.
    public func stopObservingCommits(on db: Database) {
        db.changeRecording.observedKeys = nil
        db.setCommitHook(nil)
        db.setRollbackHook(nil)
    }
}
