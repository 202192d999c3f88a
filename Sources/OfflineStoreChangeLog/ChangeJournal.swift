import OfflineStoreSQLite

/// The change journal: the append-only table (`ostore_journal` in the metadatabase) the tracking
/// triggers write, and the fold that moves it into the keyed log (`ostore_changes`).
///
/// Upserting each tracked write straight into the keyed log would insert into the log's unique
/// index `(tableID, pk, columnName)` at a place set by a random key, plus the `ON CONFLICT`
/// clause, on every row: most of a tracked row's cost once the index outgrows the cache. The
/// triggers append to a rowid table with no other index and no conflict clause instead, and ``fold(_:meta:)`` moves the
/// journal into the keyed log with `INSERT … SELECT … ORDER BY seq` and the same upsert (in steps
/// of ``foldStep`` entries): each key and column ends with its latest clock and the place of its
/// latest journal entry, exactly what the per-row upsert gave.
///
/// Who folds: everything that reads or merges the keyed log on a connection that can write — the
/// push reader (``ChangeLog/pendingChanges(_:after:limit:)``), the incoming apply (first, inside its
/// transaction), ``ChangeLog/pendingCount(_:)`` outside a transaction, the sync client's
/// `requeuePushes(after:endpoint:_:)`, a rescan, and the purge handling at attach. Readers that
/// must not write (``ChangeLogReader``, `ostore log`/`status`/`check`, a pool's `query_only`
/// readers, a count inside a transaction) read ``foldedLog(_:)``, the keyed log as a fold would
/// leave it, computed on the fly.
///
/// Places in the queue: a journal entry's `seq` is its rowid, which SQLite assigns as one more
/// than the journal's largest, so an append reads nothing but the journal's right-most page, and
/// the numbering restarts at 1 once a fold has emptied the journal. Its place is `seq` plus the
/// keyed log's newest place when it is folded: the fold gives it that place, and the folded view
/// shows it. So the newest place, the keyed log's newest plus the journal's largest `seq`, never
/// goes backwards: an append raises it by one, a direct write to the keyed log (the incoming apply,
/// which folds first) by one, and a fold leaves it as it is (its last entry takes exactly that
/// place), or, folding only the journal's oldest entries (a push reading its next batch,
/// ``foldAhead(of:count:_:meta:)``), moves it forward by the journal's entries moved so far: the
/// entries left behind take their places after the keyed log's new newest. That is the number the
/// coverage watermark compares (``newestSequence(_:meta:)``); a watermark is never ahead of it but
/// for a lost commit. What deletes keyed entries outright (rows leaving a scope) keeps the newest
/// place with ``holdNewestPlace(_:site:_:)``.
enum ChangeJournal {
    static let tableName = "ostore_journal"

    /// The keyed log's newest entry: its place and its clock; nil for an empty log.
    static func newestKeyedEntry(_ db: Database) throws -> (seq: Int64, clock: Int64)? {
        try db.fetchOne(
            "SELECT seq, clock FROM \(identifier: Metadatabase.schemaName).ostore_changes ORDER BY seq DESC LIMIT 1"
        ).map { (try $0.decode(at: 0), try $0.decode(at: 1)) }
    }

    /// Keeps `newest` (``newestKeyedEntry(_:)`` read before entries were deleted) the keyed log's
    /// newest place and clock when the deletes took the entry holding it: else the next change
    /// would take a place the push watermark already passed (and never be pushed), and the coverage
    /// watermark would be ahead of the log (a rescan of every row at the next open). One entry of no
    /// table (table number 0, which no tracked table has) holds it, as a version of `site`, this
    /// store's own number, so it is never queued for pushing.
    static func holdNewestPlace(_ newest: (seq: Int64, clock: Int64)?, site: Int, _ db: Database) throws {
        guard let newest, (try newestKeyedEntry(db)?.seq ?? 0) < newest.seq else { return }
        try db.execute(
            """
            INSERT INTO \(identifier: Metadatabase.schemaName).ostore_changes (tableID, pk, columnName, clock, site, seq)
            VALUES (0, '', '', \(newest.clock), \(site), \(newest.seq))
            ON CONFLICT (tableID, pk, columnName) DO UPDATE SET clock = excluded.clock, site = excluded.site, seq = excluded.seq
            """)
    }

    /// `INSERT INTO ostore_journal …` for one change; `tableID`, `key`, `column` and `clock` are SQL
    /// expressions (literals and `NEW`/`OLD` columns in a trigger, parameters elsewhere). With
    /// `condition`, the change is appended only when it holds. The target is unqualified: SQLite
    /// lets a TEMP trigger write into another schema's table only by its bare name. The rowid is
    /// left to SQLite: computing a place here (the newest of both tables, plus one) would cost more
    /// than the append itself.
    static func appendSQL(tableID: String, key: String, column: String, clock: String, where condition: String? = nil)
        -> String
    {
        let values = "\(tableID), \(key), \(column), \(clock)"
        let source = condition.map { "SELECT \(values) WHERE \($0)" } ?? "VALUES (\(values))"
        return "INSERT INTO \(tableName) (tableID, pk, columnName, clock) \(source);"
    }

    /// The newest place in the queue as SQL (see the type's documentation), for the triggers'
    /// watermark; `meta` is the metadatabase's schema name as SQL.
    static func newestSequenceSQL(meta: String) -> String {
        "coalesce((SELECT max(seq) FROM \(meta).\(tableName)), 0) + coalesce((SELECT max(seq) FROM \(meta).ostore_changes), 0)"
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

    /// How many places one step of a fold moves (see ``fold(_:meta:)``).
    static let foldStep: Int64 = 8_192

    /// Moves every journal entry into the keyed log, in `seq` order, each to the keyed log's newest
    /// place (before the fold) plus its `seq`, and empties the journal, in one transaction (a
    /// savepoint inside the caller's): a failure or a kill at any point leaves each change in
    /// exactly one of the two tables. Returns how many entries it moved.
    ///
    /// With `oldest`, only the journal's `oldest` oldest entries move (``foldAhead(of:count:_:meta:)``);
    /// a later fold places the rest after the keyed log's newest place as that fold finds it, so
    /// their places grow by the entries moved before them: a gap in the numbering, to which the
    /// queue's order is indifferent, and the newest place moves forward by as much, never back.
    ///
    /// A large journal moves in steps of ``foldStep`` places, each step's journal rows deleted
    /// before the next is inserted, so the keyed log's new pages reuse the journal's freed ones and
    /// the file grows by what the keyed log needs, not by that plus the journal. The last step
    /// empties the journal at once.
    @discardableResult
    static func fold(_ db: Database, meta: String = Metadatabase.schemaName, oldest count: Int64? = nil) throws
        -> Int
    {
        guard try !isEmpty(db, meta: meta) else { return 0 }
        let journal = "\(quoteIdentifier(meta)).\(quoteIdentifier(tableName))"
        return try db.transaction(.immediate) { db in
            let bounds = try db.fetchOne(
                """
                SELECT (SELECT min(seq) FROM \(identifier: meta).\(identifier: tableName)),
                    (SELECT max(seq) FROM \(identifier: meta).\(identifier: tableName)),
                    (SELECT max(seq) FROM \(identifier: meta).ostore_changes)
                """)
            let oldest = try bounds?.decode(Int64?.self, at: 0) ?? 0
            let newest = try bounds?.decode(Int64?.self, at: 1) ?? 0
            // The newest entry this fold moves.
            let last = count.map { min(newest, oldest + max($0, 1) - 1) } ?? newest
            // Each entry's place: the keyed log's newest now, plus its `seq`.
            let base = try bounds?.decode(Int64?.self, at: 2) ?? 0
            let upsert = """
                INSERT INTO \(quoteIdentifier(meta)).ostore_changes (tableID, pk, columnName, clock, site, seq)
                SELECT tableID, pk, columnName, clock, 0, seq + ?1 FROM \(journal) WHERE seq < ?2 ORDER BY seq
                ON CONFLICT (tableID, pk, columnName) DO UPDATE SET clock = excluded.clock, site = 0, seq = excluded.seq
                """
            var moved = 0
            var low = oldest
            repeat {
                let high = last - low < foldStep ? last + 1 : low + foldStep
                try db.execute(sql: upsert, arguments: [base, high])
                moved += db.changesCount
                if high > newest {
                    // Without a WHERE clause SQLite empties the table's pages at once, not row by row.
                    try db.execute(sql: "DELETE FROM \(journal)")
                } else {
                    try db.execute(sql: "DELETE FROM \(journal) WHERE seq < ?", arguments: [high])
                }
                low = high
            } while low <= last
            return moved
        }
    }

    /// Folds the journal's oldest entries until the keyed log holds `count` local entries after
    /// `sequence`, or the journal is empty: what a push reads next, without the whole journal
    /// folded before the first batch can go (100,000 entries took about 0.25 s while the server
    /// waited). The sync engine reads its next batch while the server stores the ones in flight,
    /// so the rest of the fold is done then. A journal of at most twice `count` entries is folded
    /// whole, as before; a larger one in steps of at least twice `count` entries, each at least as
    /// many as the journal had moved before it, so the gaps the steps leave in the numbering add
    /// up to at most about twice the journal's entries (see ``fold(_:meta:oldest:)``).
    static func foldAhead(of sequence: Int64, count: Int, _ db: Database, meta: String = Metadatabase.schemaName)
        throws
    {
        let step = 2 * Int64(max(count, 1))
        while let bounds = try db.fetchOne(
            """
            SELECT (SELECT min(seq) FROM \(identifier: meta).\(identifier: tableName)),
                (SELECT max(seq) FROM \(identifier: meta).\(identifier: tableName))
            """),
            let oldest = try bounds.decode(Int64?.self, at: 0), let newest = try bounds.decode(Int64?.self, at: 1)
        {
            guard newest - oldest + 1 > step else {
                try fold(db, meta: meta)
                return
            }
            let ready =
                try db.fetchValue(
                    Int.self,
                    """
                    SELECT count(*) FROM (SELECT 1 FROM \(identifier: meta).ostore_changes
                        WHERE seq > \(sequence) AND site = 0 LIMIT \(count))
                    """) ?? 0
            guard ready < count else { return }
            try fold(db, meta: meta, oldest: max(step, oldest - 1))
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
            (WITH latest AS MATERIALIZED (
                SELECT tableID, pk, columnName, clock, max(seq) AS seq FROM \(journal) GROUP BY tableID, pk, columnName),
            journal AS MATERIALIZED (
                SELECT tableID, pk, columnName, clock, seq + (SELECT coalesce(max(seq), 0) FROM \(keyed)) AS seq FROM latest)
            SELECT tableID, pk, columnName, clock, site, seq FROM \(keyed) AS k
            WHERE NOT EXISTS (
                SELECT 1 FROM journal AS j WHERE j.tableID = k.tableID AND j.pk = k.pk AND j.columnName = k.columnName)
            UNION ALL SELECT tableID, pk, columnName, clock, 0, seq FROM journal)
            """
    }

    /// The keyed log when the journal is empty (or after folding it, on a connection that may),
    /// ``foldedLog(_:)`` otherwise: what a reader of the log reads from. With `ahead`, a reader of
    /// the queue's next `count` entries after `sequence`, only as much is folded as that needs
    /// (``foldAhead(of:count:_:meta:)``): entries still in the journal come after all it reads.
    static func readableLog(
        _ db: Database, meta: String = Metadatabase.schemaName, fold mayFold: Bool,
        ahead: (sequence: Int64, count: Int)? = nil
    ) throws -> String {
        if try isEmpty(db, meta: meta) { return "\(quoteIdentifier(meta)).ostore_changes" }
        if mayFold, try canFold(db) {
            if let ahead {
                try foldAhead(of: ahead.sequence, count: ahead.count, db, meta: meta)
            } else {
                try fold(db, meta: meta)
            }
            return "\(quoteIdentifier(meta)).ostore_changes"
        }
        return foldedLog(meta)
    }

    /// The newest place in the queue (see the type's documentation); nil when both tables are empty.
    static func newestSequence(_ db: Database, meta: String = Metadatabase.schemaName) throws -> Int64? {
        let keyed = try db.fetchValue(Int64.self, "SELECT max(seq) FROM \(identifier: meta).ostore_changes")
        guard try db.tableExists(tableName, schema: meta),
            let journal = try db.fetchValue(
                Int64.self, "SELECT max(seq) FROM \(identifier: meta).\(identifier: tableName)")
        else { return keyed }
        return journal + (keyed ?? 0)
    }
}
