/// The change journal: the append-only table (`ostore_journal` in the metadatabase) the tracking
/// triggers write, and the fold that moves it into the keyed log (`ostore_changes`).
///
/// A tracked write used to upsert its entry straight into the keyed log: an insert into the
/// log's unique index `(tableID, pk, columnName)` at a place set by a random key, plus the
/// `ON CONFLICT` clause, on every row; most of a tracked row's cost once the index outgrows the
/// cache (the README's change-log section has the measurements). The triggers now append to a
/// rowid table with no other index, and ``fold(_:meta:)`` moves the journal into the keyed log
/// in one `INSERT … SELECT … ORDER BY seq` with the same upsert: each key and column ends with its
/// latest clock and the place of its latest journal entry, exactly what the per-row upsert gave.
///
/// Who folds: everything that reads or merges the keyed log on a connection that can write — the
/// push reader (``ChangeLog/pendingChanges(_:after:limit:)``), the remote apply (first, inside its
/// transaction), ``ChangeLog/pendingCount(_:)`` outside a transaction, ``ChangeLog/requeuePushes(after:endpoint:_:)``,
/// a rescan, and the purge handling at attach. Readers that must not write (``ChangeLogReader``,
/// `ostore log`/`status`/`check`, a pool's `query_only` readers, a count inside a transaction) read
/// ``foldedLog(_:)``, the keyed log as a fold would leave it, computed on the fly.
///
/// Places in the queue: an entry takes one more than the newest place in either table, so the
/// numbering never goes backwards when a fold empties the journal, and the keyed log's own writes
/// (the remote apply's, which fold first) and the journal's never take the same number.
enum ChangeJournal {
    static let tableName = "ostore_journal"

    /// `INSERT INTO ostore_journal …` for one change; `tableID`, `key`, `column` and `clock` are SQL
    /// expressions (literals and `NEW`/`OLD` columns in a trigger, parameters elsewhere), `meta`
    /// the metadatabase's schema name as SQL (quoted when it needs to be). With
    /// `condition`, the change is appended only when it holds. The target is unqualified: SQLite
    /// lets a TEMP trigger write into another schema's table only by its bare name.
    static func appendSQL(
        tableID: String, key: String, column: String, clock: String, meta: String, where condition: String? = nil
    ) -> String {
        // The place: the journal's newest plus one; with the journal empty (just folded), the keyed
        // log's newest plus one. `coalesce` evaluates the second only when the first is NULL.
        let place = "coalesce((SELECT max(seq) FROM \(meta).\(tableName)), (SELECT max(seq) FROM \(meta).ostore_changes), 0) + 1"
        let values = "\(place), \(tableID), \(key), \(column), \(clock)"
        let source = condition.map { "SELECT \(values) WHERE \($0)" } ?? "VALUES (\(values))"
        return "INSERT INTO \(tableName) (seq, tableID, pk, columnName, clock) \(source);"
    }

    /// Whether the journal holds nothing to fold; true too for a metadatabase older than 1.3 that a
    /// read-only reader opened (it has no journal, and was never written by triggers that use one).
    static func isEmpty(_ db: Database, meta: String = Metadatabase.schemaName) throws -> Bool {
        guard try db.tableExists(tableName, schema: meta) else { return true }
        return try db.fetchValue(
            Bool.self, "SELECT NOT EXISTS (SELECT 1 FROM \(identifier: meta).\(identifier: tableName))") ?? true
    }

    /// Whether this connection may fold: not opened read-only, not a pool reader (`query_only`).
    static func canFold(_ db: Database) throws -> Bool {
        guard !db.configuration.readonly else { return false }
        return try db.fetchValue(Bool.self, "PRAGMA query_only") == false
    }

    /// Moves every journal entry into the keyed log, in place order, and empties the journal, in
    /// one transaction (a savepoint inside the caller's): a failure or a kill at any point leaves
    /// each change in exactly one of the two tables. Returns how many entries it moved.
    @discardableResult
    static func fold(_ db: Database, meta: String = Metadatabase.schemaName) throws -> Int {
        guard try !isEmpty(db, meta: meta) else { return 0 }
        return try db.transaction(.immediate) { db in
            let bounds = try db.fetchOne(
                """
                SELECT (SELECT min(seq) FROM \(identifier: meta).\(identifier: tableName)),
                    (SELECT max(seq) FROM \(identifier: meta).ostore_changes)
                """)
            let oldest = try bounds?.decode(Int64?.self, at: 0) ?? 0
            let keyedNewest = try bounds?.decode(Int64?.self, at: 1) ?? 0
            // Every writer of the keyed log folds first, so its places are all below the journal's.
            // Were one not to (a tool writing the file by hand), the journal's entries move up past
            // it, in their order, rather than collide with its places and stop every later fold.
            let shift = keyedNewest >= oldest ? keyedNewest - oldest + 1 : 0
            try db.execute(
                """
                INSERT INTO \(identifier: meta).ostore_changes (tableID, pk, columnName, clock, site, seq)
                SELECT tableID, pk, columnName, clock, 0, seq + \(shift)
                FROM \(identifier: meta).\(identifier: tableName) WHERE true ORDER BY seq
                ON CONFLICT (tableID, pk, columnName) DO UPDATE SET clock = excluded.clock, site = 0, seq = excluded.seq
                """)
            let moved = db.changesCount
            // Without a WHERE clause SQLite empties the table's pages at once, not row by row.
            try db.execute("DELETE FROM \(identifier: meta).\(identifier: tableName)")
            return moved
        }
    }

    /// A `FROM` source with the keyed log's columns (`tableID, pk, columnName, clock, site, seq`) as
    /// a fold would leave it, for connections that must not fold: each key and column's latest
    /// journal entry replaces its keyed entry. It reads the whole journal (grouped once per
    /// statement), so it is for tools and read-only connections; a connection that can write folds.
    static func foldedLog(_ meta: String) -> String {
        let journal = "\(quoteIdentifier(meta)).\(quoteIdentifier(tableName))"
        let keyed = "\(quoteIdentifier(meta)).ostore_changes"
        // With one max() the bare `clock` is taken from the row holding the maximum (SQLite's rule).
        return """
            (WITH journal AS MATERIALIZED (
                SELECT tableID, pk, columnName, clock, max(seq) AS seq FROM \(journal) GROUP BY tableID, pk, columnName)
            SELECT tableID, pk, columnName, clock, site, seq FROM \(keyed) AS k
            WHERE NOT EXISTS (
                SELECT 1 FROM journal AS j WHERE j.tableID = k.tableID AND j.pk = k.pk AND j.columnName = k.columnName)
            UNION ALL SELECT tableID, pk, columnName, clock, 0, seq FROM journal)
            """
    }

    /// The keyed log when the journal is empty (or after folding it, on a connection that may),
    /// ``foldedLog(_:)`` otherwise: what a reader of the log reads from.
    static func readableLog(_ db: Database, meta: String = Metadatabase.schemaName, fold mayFold: Bool) throws
        -> String
    {
        if try isEmpty(db, meta: meta) { return "\(quoteIdentifier(meta)).ostore_changes" }
        if mayFold, try canFold(db) {
            try fold(db, meta: meta)
            return "\(quoteIdentifier(meta)).ostore_changes"
        }
        return foldedLog(meta)
    }

    /// The newest place in the queue, in either table; nil when both are empty.
    static func newestSequence(_ db: Database, meta: String = Metadatabase.schemaName) throws -> Int64? {
        let keyed = try db.fetchValue(Int64.self, "SELECT max(seq) FROM \(identifier: meta).ostore_changes")
        guard try db.tableExists(tableName, schema: meta),
            let journal = try db.fetchValue(
                Int64.self, "SELECT max(seq) FROM \(identifier: meta).\(identifier: tableName)")
        else { return keyed }
        return max(journal, keyed ?? journal)
    }
}
