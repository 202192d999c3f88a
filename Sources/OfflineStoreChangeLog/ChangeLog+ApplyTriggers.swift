import OfflineStoreSQLite

extension ChangeLog {
    /// Batches at least this large apply with this connection's tracking triggers taken out (see
    /// ``withoutTrackingTriggers(_:_:)``): dropping and creating them again costs about what the
    /// triggers cost 500 changes, so smaller batches keep them.
    static let batchSizeWithoutTrackingTriggers = 1_000

    /// Runs `body` with this connection's TEMP tracking triggers dropped, then creates them again
    /// from the same text, all inside the caller's transaction.
    ///
    /// While remote changes apply, recording is off and every trigger's `WHEN` is false, yet SQLite
    /// still enters each trigger's program for each row (a frame allocated, zeroed and freed, and a
    /// statement journal for the insert): about a third of inserting a pulled row. Without the
    /// triggers the same rows are written and nothing is recorded, exactly as with them.
    ///
    /// Any failure leaves the triggers to the transaction's rollback, which takes back the drop
    /// with everything else (TEMP schema changes are transactional); the caller must own the
    /// transaction, so a failure always rolls it back. Other TEMP triggers (an app's own) stay.
    /// See <https://www.sqlite.org/lang_createtrigger.html> and
    /// <https://www.sqlite.org/schematab.html> (the stored text drops `TEMP`).
    func withoutTrackingTriggers<Result>(_ db: Database, _ body: () throws -> Result) throws -> Result {
        let triggers = try db.fetchAll(
            "SELECT name, sql FROM temp.sqlite_schema WHERE type = 'trigger' AND name LIKE \(ChangeTracker.triggerPrefix + "%") ORDER BY rowid"
        ).map { row in (name: try row.decode(String.self, at: 0), sql: try row.decode(String.self, at: 1)) }
        let stored = "CREATE TRIGGER "
        guard !triggers.isEmpty, triggers.allSatisfy({ $0.sql.hasPrefix(stored) }) else { return try body() }
        for trigger in triggers { try db.execute(sql: "DROP TRIGGER temp.\(quoteIdentifier(trigger.name))") }
        let result = try withoutTriggersInFiles(db, body)
        for trigger in triggers { try db.execute(sql: "CREATE TEMP TRIGGER " + trigger.sql.dropFirst(stored.count)) }
        return result
    }

    /// Runs `body` with the triggers stored in the database files off on this connection
    /// (`SQLITE_DBCONFIG_ENABLE_TRIGGER`; TEMP triggers are not affected), when the only ones are
    /// the store's own `ostore_unlogged_` triggers: their `WHEN` is false on a connection that
    /// records its writes, yet each costs its frame on every row. An app's own triggers keep
    /// firing: with any of them the setting is left alone. Switching it makes SQLite prepare this
    /// connection's statements again on their next use, once per large batch.
    /// See <https://www.sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfigenabletrigger>.
    private func withoutTriggersInFiles<Result>(_ db: Database, _ body: () throws -> Result) throws -> Result {
        let others = try db.fetchValue(
            Int.self,
            """
            SELECT (SELECT count(*) FROM main.sqlite_schema
                    WHERE type = 'trigger' AND substr(name, 1, \(LogCoverage.unloggedTable.count + 1)) <> \(LogCoverage.unloggedTable + "_"))
                + (SELECT count(*) FROM ostore_meta.sqlite_schema WHERE type = 'trigger')
            """)
        guard others == 0 else { return try body() }
        try db.setTriggersInFilesEnabled(false, for: "apply changes")
        let result: Result
        do {
            result = try body()
        } catch {
            try? db.setTriggersInFilesEnabled(true, for: "apply changes")
            throw error
        }
        try db.setTriggersInFilesEnabled(true, for: "apply changes")
        return result
    }
}
