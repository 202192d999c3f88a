import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

@testable import OfflineStoreChangeLog

/// The change journal the triggers append to, and its fold into the keyed log.
@Suite("Change log journal")
struct ChangeLogJournalTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    func open(_ name: String = "journal.sqlite") throws -> (Database, ChangeLog) {
        let db = try Database(path: directory.path(name))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        return (db, log)
    }

    func journalCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_journal") ?? -1
    }

    func keyedCount(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_changes") ?? -1
    }

    /// Every row of the journal and of the keyed log, as text, in place order.
    func contents(_ db: Database) throws -> [String] {
        try db.fetchAll(
            String.self,
            """
            SELECT 'journal ' || seq || ' ' || tableID || ' ' || quote(pk) || ' ' || columnName || ' ' || clock
            FROM ostore_meta.ostore_journal
            UNION ALL
            SELECT 'keyed ' || seq || ' ' || tableID || ' ' || quote(pk) || ' ' || columnName || ' ' || clock || ' ' || site
            FROM ostore_meta.ostore_changes
            ORDER BY 1
            """)
    }

    /// `op key [columns]` per pending change, in queue order.
    func queue(_ db: Database, _ log: ChangeLog) throws -> [String] {
        try log.pendingChanges(db, limit: 1_000).map { change in
            let key = change.primaryKey.sorted { $0.key < $1.key }.map { $0.value.sqlLiteral }.joined(separator: ",")
            return "\(change.operation.rawValue) \(key) \(change.columns.keys.sorted())"
        }
    }

    @Test func editsOfOneColumnBeforeAPushCoalesceThroughTheJournal() throws {
        let (db, log) = try open()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'one')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
        for name in ["two", "three", "four"] {
            try db.execute("UPDATE remindersLists SET name = \(name) WHERE id = 'A'")
        }
        // Every edit appended, nothing merged yet.
        #expect(try journalCount(db) == 3)
        #expect(try keyedCount(db) == 1)
        let newest = try #require(
            try db.fetchValue(Int64.self, "SELECT clock FROM ostore_meta.ostore_journal ORDER BY seq DESC LIMIT 1"))

        let pending = try log.pendingChanges(db)
        #expect(pending.count == 1)
        #expect(pending.first?.operation == .update)
        #expect(pending.first?.columns == ["name": .text("four")])
        #expect(pending.first?.clock.packed == newest)
        #expect(try journalCount(db) == 0)
        #expect(try keyedCount(db) == 2)
        #expect(try log.pendingCount(db) == 1)
    }

    @Test func theQueueKeepsItsOrderAndNumbersGrowAcrossFolds() throws {
        let (db, log) = try open()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'a'), ('B', 'b')")
        let first = try log.pendingChanges(db)
        #expect(try journalCount(db) == 0)
        let folded = try #require(first.last?.sequence)
        // The journal is empty now: its numbering restarts, but the places follow the keyed log's.
        try db.execute("UPDATE remindersLists SET name = 'a2' WHERE id = 'A'")
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('C', 'c')")
        #expect(try db.fetchAll(Int64.self, "SELECT seq FROM ostore_meta.ostore_journal ORDER BY seq") == [1, 2])
        #expect(try ChangeJournal.newestSequence(db) == folded + 2)
        #expect(try db.fetchValue(Int64.self, "SELECT seq FROM main.ostore_log_watermark") == folded + 2)
        #expect(
            try queue(db, log) == [
                "insert 'A' [\"id\", \"name\", \"ownerID\"]", "insert 'B' [\"id\", \"name\", \"ownerID\"]",
                "update 'A' [\"name\"]", "insert 'C' [\"id\", \"name\", \"ownerID\"]",
            ])

        // B's insert acknowledged; an edit of B moves it behind everything, in a later fold.
        try log.markPushed(db, upTo: first[1].sequence)
        try db.execute("UPDATE remindersLists SET name = 'b2' WHERE id = 'B'")
        try db.execute("UPDATE remindersLists SET name = 'a3' WHERE id = 'A'")
        let pending = try log.pendingChanges(db)
        #expect(pending.map { $0.primaryKey["id"]?.sqlLiteral ?? "" } == ["'C'", "'B'", "'A'"])
        #expect(pending.map(\.sequence) == pending.map(\.sequence).sorted())
        #expect(pending.map(\.sequence) == [folded + 2, folded + 3, folded + 4])
        #expect(pending.last?.columns == ["name": .text("a3")])
    }

    /// The user's conflict policy applies to the triggers' statements too: with the keyed upsert
    /// gone from the trigger, it has no conflict to act on, and every edit is recorded.
    @Test func theUsersConflictPolicyChangesNothingTheTriggersRecord() throws {
        let (db, log) = try open()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'a')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
        var edits = 0
        for policy in ["OR IGNORE", "OR REPLACE", "OR ABORT", "OR FAIL", "OR ROLLBACK"] {
            for round in 1...2 {
                try db.execute(sql: "UPDATE \(policy) remindersLists SET name = '\(policy) \(round)' WHERE id = 'A'")
                edits += 1
            }
            #expect(try journalCount(db) == edits, "\(policy)")
        }
        // Folded, then edited again under OR IGNORE: the fold's upsert is its own statement.
        #expect(try queue(db, log) == ["update 'A' [\"name\"]"])
        try db.execute("UPDATE OR IGNORE remindersLists SET name = 'last' WHERE id = 'A'")
        try db.execute("INSERT OR REPLACE INTO remindersLists (id, name) VALUES ('B', 'b')")
        let pending = try log.pendingChanges(db)
        #expect(pending.map(\.operation) == [.update, .insert])
        #expect(pending.first?.columns == ["name": .text("last")])
    }

    /// Commits with tracking, folds, and loses the next transaction's metadatabase commit, as a
    /// process killed between the two files' commits does: the watermark that transaction wrote
    /// (a place after the fold's) must still be ahead of the log at the next open.
    @Test func aWatermarkAheadOfTheLogIsDetectedAfterAFold() throws {
        let path = directory.path("journal.sqlite")
        let metaPath = Metadatabase.path(forDatabaseAt: path)
        func checkpointAndClose(_ db: Database) throws {
            try db.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")
            try db.execute("PRAGMA ostore_meta.wal_checkpoint(TRUNCATE)")
            try db.close()
        }
        do {
            let (db, log) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'a'), ('B', 'b')")
            try db.execute("UPDATE remindersLists SET name = 'a2' WHERE id = 'A'")
            #expect(try log.foldJournal(db) == 3)
            try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
            try checkpointAndClose(db)
        }
        let backup = directory.path("meta-backup")
        try FileManager.default.copyItem(atPath: metaPath, toPath: backup)
        do {
            let (db, _) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('C', 'c')")
            #expect(try journalCount(db) == 1)
            try checkpointAndClose(db)
        }
        try FileManager.default.removeItem(atPath: metaPath)
        try FileManager.default.copyItem(atPath: backup, toPath: metaPath)

        let db = try Database(path: path)
        #expect(try ChangeLogCoverage.problems(in: db).count == 1)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        #expect(try log.coversEveryChange(db))
        // The rescan records every row again; C, whose log was lost, among them.
        #expect(
            Set(try log.pendingChanges(db).compactMap { $0.primaryKey["id"]?.sqlLiteral }) == ["'A'", "'B'", "'C'"])
    }

    /// A journal longer than one fold step moves step by step (each step's journal rows freed
    /// before the next): the keyed log ends as one step, and the folded view readers use, give.
    @Test func aFoldInStepsGivesWhatTheFoldedViewShows() throws {
        let (db, log) = try open()
        let rows = Int(ChangeJournal.foldStep) + 1_808
        try db.execute(
            sql: """
                WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                INSERT INTO remindersLists (id, name) SELECT 'L' || i, 'list ' || i FROM n
                """, arguments: [rows - 1])
        #expect(try log.foldJournal(db) == rows)
        try db.execute("UPDATE remindersLists SET name = name || ' renamed'")
        try db.execute("UPDATE remindersLists SET name = 'again' WHERE rowid % 1000 = 0")
        try db.execute("DELETE FROM remindersLists WHERE rowid % 999 = 0")
        let journaled = try journalCount(db)
        #expect(journaled > Int(ChangeJournal.foldStep))
        func entries(_ source: String) throws -> [String] {
            try db.fetchAll(
                String.self,
                SQL(
                    sql:
                        "SELECT tableID || ' ' || quote(pk) || ' ' || columnName || ' ' || clock || ' ' || site || ' ' "
                        + "|| seq FROM \(source) ORDER BY seq"))
        }
        let expected = try entries(ChangeJournal.foldedLog(Metadatabase.schemaName))
        #expect(try log.foldJournal(db) == journaled)
        #expect(try entries("ostore_meta.ostore_changes") == expected)
        #expect(expected.count == 2 * rows + rows / 999)
        #expect(try journalCount(db) == 0)
    }

    /// Reading the queue a batch at a time folds a large journal only as far as each batch needs
    /// (a push's first batch goes without waiting for the whole fold), and what is read is what a
    /// whole fold gives: every key and column, each last with its newest clock, in queue order. A
    /// column changed again further on is read again there, as it would be had the app changed it
    /// while the first batches were on their way.
    @Test func readingTheQueueInBatchesFoldsALargeJournalAsItGoes() throws {
        var (db, log) = try open()
        let copy = directory.path("whole.sqlite")
        func insert(_ prefix: String) throws {
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2999)
                    INSERT INTO remindersLists (id, name) SELECT ? || i, 'list ' || i FROM n
                    """, arguments: [prefix])
        }
        // Rows inserted early changed further on (renamed, renamed again after more inserts, so
        // in a later step of the fold, deleted).
        try insert("L")
        try db.execute("UPDATE remindersLists SET name = 'renamed' WHERE id LIKE 'L%' AND rowid % 7 = 0")
        try insert("M")
        try db.execute("UPDATE remindersLists SET name = 'again' WHERE id LIKE 'L%' AND rowid % 21 = 0")
        try db.execute("DELETE FROM remindersLists WHERE id LIKE 'L%' AND rowid % 11 = 0")
        let journaled = try journalCount(db)
        #expect(journaled > 6_000 + 3_000 / 7)
        // The same store folded whole, for comparison.
        try db.execute("VACUUM main INTO \(copy)")
        try db.execute("VACUUM ostore_meta INTO \(Metadatabase.path(forDatabaseAt: copy))")

        func entry(_ change: PendingChange) -> String {
            "\(change.operation.rawValue) \(change.primaryKey["id"]?.sqlLiteral ?? "") \(change.columns.keys.sorted())"
        }
        var read: [PendingChange] = []
        var newest = try #require(try ChangeJournal.newestSequence(db))
        var journalAfterBatches: [Int] = []
        while true {
            let batch = try log.pendingChanges(db, after: read.last?.sequence, limit: 500)
            guard !batch.isEmpty else { break }
            read += batch
            journalAfterBatches.append(try journalCount(db))
            if journalAfterBatches.count == 2 {
                // A process that ends with the journal folded in part: the next one takes over
                // (its open finds the log covering every change, and rescans nothing).
                (db, log) = try open()
            }
            // The newest place never goes back, and nothing but the reads changes the log.
            let now = try #require(try ChangeJournal.newestSequence(db))
            #expect(now >= newest)
            newest = now
            #expect(try log.coversEveryChange(db))
        }
        // Folded in steps: the first batch left most of the journal where it was.
        #expect(journalAfterBatches.first.map { $0 > journaled / 2 } == true)
        #expect(try journalCount(db) == 0)
        #expect(read.map(\.sequence) == read.map(\.sequence).sorted() && Set(read.map(\.sequence)).count == read.count)

        let wholeDB = try Database(path: copy)
        let wholeLog = try ChangeLog.open(wholeDB, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        #expect(try journalCount(wholeDB) == journaled)
        let whole = try wholeLog.pendingChanges(wholeDB, limit: 100_000)
        #expect(try journalCount(wholeDB) == 0)
        // Each key and column ends with the same clock, and the order of their last reads is the
        // whole fold's order.
        var last: [String: (clock: Int64, position: Int)] = [:]
        for (position, change) in read.enumerated() {
            last[entry(change)] = (change.clock.packed, position)
        }
        #expect(last.count == whole.count && read.count > whole.count)
        #expect(whole.allSatisfy { last[entry($0)]?.clock == $0.clock.packed })
        #expect(whole.map(entry) == last.sorted { $0.value.position < $1.value.position }.map(\.key))
        // Values are read from the rows as they are now, by both.
        let wholeValues = Dictionary(whole.map { (entry($0), $0.columns) }, uniquingKeysWith: { $1 })
        #expect(read.allSatisfy { wholeValues[entry($0)] == $0.columns })
    }

    /// A fold that fails part way (here a trigger refuses one entry) or is rolled back with the
    /// caller's transaction leaves every change where it was: in the journal, once.
    @Test func anInterruptedFoldLeavesEachChangeExactlyOnce() throws {
        let (db, log) = try open()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'a'), ('B', 'b')")
        #expect(try log.foldJournal(db) == 2)
        try db.execute("UPDATE remindersLists SET name = 'a2' WHERE id = 'A'")
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('C', 'c'), ('D', 'd')")
        try db.execute("UPDATE remindersLists SET name = 'b2' WHERE id = 'B'")
        let before = try contents(db)
        #expect(try journalCount(db) == 4)

        try db.execute(
            """
            CREATE TEMP TRIGGER refuse_d BEFORE INSERT ON ostore_meta.ostore_changes WHEN NEW.pk = 'D'
            BEGIN SELECT RAISE(ABORT, 'refused for the test'); END
            """)
        #expect(throws: (any Error).self) { try log.foldJournal(db) }
        #expect(try contents(db) == before)
        try db.execute("DROP TRIGGER temp.refuse_d")

        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try db.transaction(.immediate) { db in
                #expect(try log.foldJournal(db) == 4)
                throw Abandon()
            }
        }
        #expect(try contents(db) == before)

        #expect(try log.foldJournal(db) == 4)
        #expect(try journalCount(db) == 0)
        // A, B, C, D inserted, A and B renamed: six entries, each once.
        #expect(try keyedCount(db) == 6)
        #expect(try log.pendingCount(db) == 6)
    }

    /// Release 1.2 kept the log in `ostore_changes` alone, written by the triggers' upsert: its
    /// metadatabase is built here with the 1.2 plan and entries as those triggers wrote them.
    @Test func aMetadatabaseAt1_2UpgradesWithItsPendingChangesIntact() throws {
        let path = directory.path("old.sqlite")
        let metaPath = Metadatabase.path(forDatabaseAt: path)
        do {
            let meta = try Database(path: metaPath)
            try Migrator(plan: MetadatabasePlan.self, releasedUpTo: "1.2.0").migrate(meta)
            #expect(try !meta.tableExists(ChangeJournal.tableName))
            try meta.close()
        }
        let clocks: [Int64] = [
            ChangeClock(validMilliseconds: 1_000, counter: 0).packed,
            ChangeClock(validMilliseconds: 2_000, counter: 0).packed,
            ChangeClock(validMilliseconds: 3_000, counter: 0).packed,
        ]
        do {
            let db = try Database(path: path)
            try db.execute("ATTACH DATABASE \(metaPath) AS ostore_meta")
            _ = try StoreIdentity.reconcile(db)
            try Migrator(plan: RemindersMigrationPlan.self).migrate(db)
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'a2'), ('B', 'b')")
            try db.execute("INSERT INTO ostore_meta.ostore_tables (name) VALUES ('remindersLists')")
            for (key, column, clock) in [("A", "", clocks[0]), ("B", "", clocks[1]), ("A", "name", clocks[2])] {
                try db.execute(
                    """
                    INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site)
                    VALUES (1, \(key), \(column), \(clock), 0)
                    ON CONFLICT (tableID, pk, columnName) DO UPDATE SET clock = excluded.clock, site = 0, seq = excluded.seq
                    """)
            }
            try db.execute("UPDATE ostore_meta.ostore_store SET pushedSeq = 1, lastClock = \(clocks[2])")
            try db.close()
        }

        let db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        #expect(try Migrator(plan: MetadatabasePlan.self).currentVersion(try Database(path: metaPath)) == "1.4.0")
        #expect(try journalCount(db) == 0)
        #expect(try log.pendingCount(db) == 2)
        try db.execute("UPDATE remindersLists SET name = 'b2' WHERE id = 'B'")
        #expect(try ChangeJournal.newestSequence(db) == 4)
        let pending = try log.pendingChanges(db)
        #expect(pending.map(\.sequence) == [2, 3, 4])
        #expect(pending.map(\.operation) == [.insert, .update, .update])
        #expect(pending[0].columns["name"] == .text("b2") && pending[0].clock.packed == clocks[1])
        #expect(pending[1].columns == ["name": .text("a2")] && pending[1].clock.packed == clocks[2])
        #expect(pending[2].columns == ["name": .text("b2")] && pending[2].clock.packed > clocks[2])
    }

    /// Release 1.3 had no replacing downloads: its cursors and acknowledged marks stay, and no
    /// download is under way.
    @Test func aMetadatabaseAt1_3UpgradesWithItsCursorsAndNoReplacingDownload() throws {
        let path = directory.path("old.sqlite")
        let metaPath = Metadatabase.path(forDatabaseAt: path)
        do {
            let meta = try Database(path: metaPath)
            try Migrator(plan: MetadatabasePlan.self, releasedUpTo: "1.3.0").migrate(meta)
            #expect(try !meta.tableExists("ostore_downloaded"))
            try meta.execute(
                """
                INSERT INTO ostore_sync (endpoint, cursor, acknowledgedThrough)
                VALUES ('https://sync.example.com/family', 'c1', 7)
                """)
            try meta.close()
        }
        let db = try Database(path: path)
        _ = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        let row = try #require(
            try db.fetchOne("SELECT cursor, acknowledgedThrough, replacingDownload FROM ostore_meta.ostore_sync"))
        #expect(try row.decode(String.self, at: 0) == "c1")
        #expect(try row.decode(Int64.self, at: 1) == 7)
        #expect(try row.decode(Int64?.self, at: 2) == nil)
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_downloaded") == 0)
    }

    /// Connections that may not fold (a read-only one, a pool's `query_only` reader, a count inside a
    /// transaction) read the journal and the keyed log together, and leave the journal as it is.
    @Test func readersCountAndReadUnfoldedJournalEntriesRight() throws {
        let (db, log) = try open()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'a'), ('B', 'b')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).first!.sequence)
        try db.execute("UPDATE remindersLists SET name = 'b2' WHERE id = 'B'")
        try db.execute("UPDATE remindersLists SET name = 'b3' WHERE id = 'B'")
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('C', 'c')")
        try db.execute("UPDATE remindersLists SET name = 'a2' WHERE id = 'A'")
        // Pending: B's insert (folded), B's name (twice in the journal), C's insert, A's name.
        #expect(try journalCount(db) == 4)

        var readOnly = Configuration()
        readOnly.readonly = true
        let reader = try Database(path: db.path, configuration: readOnly)
        #expect(try ChangeLogReader.summary(in: reader)?.pendingChanges == 4)
        let entries = try ChangeLogReader.entries(in: reader, pendingOnly: true)
        #expect(
            entries.map { "\($0.operation.rawValue) \($0.key.map(\.sqlLiteral).joined()) \($0.columns)" } == [
                "insert 'B' []", "update 'B' [\"name\"]", "insert 'C' []", "update 'A' [\"name\"]",
            ])
        let places = entries.compactMap(\.sequence)
        #expect(places.count == 4 && places == places.sorted())

        let poolReader = try Database(path: db.path)
        try poolReader.execute("ATTACH DATABASE \(Metadatabase.path(forDatabaseAt: db.path)) AS ostore_meta")
        try poolReader.execute("PRAGMA query_only = 1")
        #expect(try log.pendingCount(poolReader) == 4)
        let pending = try log.pendingChanges(poolReader)
        #expect(pending.map(\.operation) == [.insert, .update, .insert, .update])
        #expect(pending[1].columns == ["name": .text("b3")])

        let countInTransaction = try db.transaction(.deferred) { db in try log.pendingCount(db) }
        #expect(countInTransaction == 4)
        #expect(try journalCount(db) == 4)
        // The store's own connection, outside a transaction, folds and counts the same.
        #expect(try log.pendingCount(db) == 4)
        #expect(try journalCount(db) == 0)
        #expect(try log.pendingChanges(db) == pending)
    }
}
