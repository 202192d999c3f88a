import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

enum LedgerV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Entry.self]
    enum Entry: Model {
        static let tableDefinition = TableDefinition("entries", options: [.strict]) {
            Column("id", .blob).primaryKey()
            Column("amount", .integer)
            Column("ratio", .real)
            Column("memo", .text)
            Column("payload", .blob)
        }
    }
}

enum LedgerPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [LedgerV1.self]
    static let stages: [MigrationStage] = []
}

enum CountersV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Counter.self]
    enum Counter: Model {
        static let tableDefinition = TableDefinition("counters") { Column("id", .integer).primaryKey() }
    }
}

enum CountersPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [CountersV1.self]
    static let stages: [MigrationStage] = []
}

@Suite("Change tracking")
struct ChangeTrackingTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    // A daemon of the old release keeps its connection open while the upgraded app migrates and
    // rebuilds a table under it: the old connection's TEMP triggers follow the table by name, so
    // its writes are still recorded (and its pending reads see the new columns).
    @Test func anOlderConnectionKeepsRecordingAfterAnotherMigratesAndRebuildsATable() throws {
        let path = directory.path("store.sqlite")
        let old = try Database(path: path)
        let oldLog = try ChangeLog.open(
            old, migrator: try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: "1.1.0"))
        try old.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try old.execute("INSERT INTO reminders (id, title, listID) VALUES ('R0', 'before', 'L')")
        if let last = try oldLog.pendingChanges(old).last { try oldLog.markPushed(old, upTo: last.sequence) }

        let upgraded = try Database(path: path)
        _ = try ChangeLog.open(upgraded, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        try old.execute("INSERT INTO reminders (id, title, listID) VALUES ('R1', 'after', 'L')")
        try old.execute("UPDATE reminders SET title = 'changed' WHERE id = 'R0'")

        let pending = try oldLog.pendingChanges(old)
        #expect(pending.map(\.operation) == [.insert, .update])
        #expect(pending.map { $0.primaryKey["id"] } == [.text("R1"), .text("R0")])
        #expect(pending.first?.columns["dueAt"] != nil)  // the whole row, as the rebuilt table has it
        #expect(pending.last?.columns == ["title": .text("changed")])
        let reopened = try ChangeLog.open(
            try Database(path: path), migrator: try Migrator(plan: RemindersMigrationPlan.self))
        #expect(try reopened.pendingCount(upgraded) == 2)
    }

    func openReminders(_ name: String = "reminders.sqlite") throws -> (Database, ChangeLog) {
        let db = try Database(path: directory.path(name))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        return (db, log)
    }

    func summary(_ changes: [PendingChange]) -> [String] {
        changes.map { change in
            let key = change.primaryKey.sorted { $0.key < $1.key }.map { "\($0.value.sqlText)" }.joined(separator: ",")
            let columns = change.columns.keys.sorted().joined(separator: ",")
            return "\(change.operation.rawValue) \(change.table) \(key) [\(columns)]"
        }
    }

    @Test func insertsUpdatesAndDeletesAreRecordedWithOnlyTheChangedColumns() throws {
        let (db, log) = try openReminders()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R', 'Milk', 'L')")
        try db.execute("UPDATE reminders SET title = 'Oat milk', notes = notes WHERE id = 'R'")
        try db.execute("UPDATE reminders SET title = 'Soy milk' WHERE id = 'R'")
        try db.execute("UPDATE reminders SET priority = NULL WHERE id = 'R'")  // NULL to NULL: no change
        let changes = try log.pendingChanges(db)
        #expect(
            summary(changes) == [
                "insert remindersLists 'L' [id,name,ownerID]",
                "insert reminders 'R' [dueAt,dueDate,id,isDone,listID,notes,priority,title]",
                "update reminders 'R' [title]",
            ])
        #expect(changes[2].columns["title"] == .text("Soy milk"))
        #expect(changes.map(\.sequence) == changes.map(\.sequence).sorted())
        #expect(changes.map(\.clock) == changes.map(\.clock).sorted())
        #expect(try log.pendingCount(db) == 3)

        try db.execute("DELETE FROM reminders WHERE id = 'R'")
        #expect(
            summary(try log.pendingChanges(db)) == [
                "insert remindersLists 'L' [id,name,ownerID]", "delete reminders 'R' []",
            ])
    }

    @Test func aPrimaryKeyChangeIsADeleteAndAnInsert() throws {
        let (db, log) = try openReminders()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'Home')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
        try db.execute("UPDATE remindersLists SET id = 'B' WHERE id = 'A'")
        #expect(
            summary(try log.pendingChanges(db)) == [
                "delete remindersLists 'A' []", "insert remindersLists 'B' [id,name,ownerID]",
            ])
    }

    /// Each column has a trigger of its own, compiled into the statements that set it (and the key
    /// change one of its own): an upsert's update and a key change made with other columns are
    /// recorded all the same, and an UPDATE that changes nothing records nothing.
    @Test func columnsChangedByUpsertsAndKeyChangesAreRecorded() throws {
        let (db, log) = try openReminders()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'One'), ('B', 'Two')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
        try db.execute(
            """
            INSERT INTO remindersLists (id, name) VALUES ('A', 'Uno')
            ON CONFLICT (id) DO UPDATE SET name = excluded.name
            """)
        try db.execute("UPDATE remindersLists SET id = 'C', name = 'Tres' WHERE id = 'B'")
        try db.execute("UPDATE remindersLists SET id = id, name = 'Uno' WHERE id = 'A'")  // no change
        #expect(
            summary(try log.pendingChanges(db)) == [
                "update remindersLists 'A' [name]", "delete remindersLists 'B' []",
                "insert remindersLists 'C' [id,name,ownerID]",
            ])
    }

    @Test func acknowledgedChangesLeaveTheQueue() throws {
        let (db, log) = try openReminders()
        for index in 0..<5 { try db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(index)"), 'x')") }
        let batch = try log.pendingChanges(db, limit: 3)
        #expect(batch.count == 3)
        try log.markPushed(db, upTo: batch.last!.sequence)
        #expect(try log.pendingCount(db) == 2)
        #expect(summary(try log.pendingChanges(db)).map { $0.split(separator: " ")[2] } == ["'L3'", "'L4'"])
    }

    // Regression: the columns of one UPDATE shared one sequence number, so a batch that ended
    // between them made the next batch (`after:` that number) skip the rest.
    @Test func eachChangedColumnOfOneUpdateHasItsOwnPlaceInTheQueue() throws {
        let (db, log) = try openReminders()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R', 'Milk', 'L')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
        try db.execute("UPDATE reminders SET title = 'Oat milk', notes = 'two', priority = 1 WHERE id = 'R'")
        var seen: [String] = []
        var after: Int64? = nil
        while case let batch = try log.pendingChanges(db, after: after, limit: 1), let change = batch.first {
            seen += change.columns.keys
            after = change.sequence
        }
        #expect(seen.sorted() == ["notes", "priority", "title"])
    }

    // Regression: a batch whose entries all had nothing to push (rows changed and then deleted,
    // read before their deletes) came back empty though changes remained, and a sync stopped there.
    @Test func aBatchIsEmptyOnlyWhenTheQueueIs() throws {
        let (db, log) = try openReminders()
        for index in 0..<3 { try db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(index)"), 'x')") }
        try db.execute("DELETE FROM remindersLists WHERE id IN ('L0', 'L1')")
        let batch = try log.pendingChanges(db, limit: 2)
        #expect(summary(batch).map { String($0.split(separator: " ")[0]) } == ["insert", "delete"])
        #expect(batch.first?.primaryKey["id"] == .text("L2"))
    }

    @Test func compositeKeysAndEveryStorageClassComeBackExactly() throws {
        let (db, log) = try openReminders()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R,1', 'It''s', 'L')")
        try db.execute("INSERT INTO tags (id, name) VALUES ('T''x', 'home')")
        try db.execute("INSERT INTO reminderTags (reminderID, tagID) VALUES ('R,1', 'T''x')")
        let tagLink = try #require(try log.pendingChanges(db).first { $0.table == "reminderTags" })
        #expect(tagLink.primaryKey == ["reminderID": .text("R,1"), "tagID": .text("T'x")])

        let ledgerDB = try Database(path: directory.path("ledger.sqlite"))
        let ledger = try ChangeLog.open(ledgerDB, migrator: try Migrator(plan: LedgerPlan.self))
        let key = Data([0, 0xFF, 0x27, 0x2C])
        let payload = Data([0, 1, 2])
        try ledgerDB.execute(
            "INSERT INTO entries (id, amount, ratio, memo, payload) VALUES (\(key), \(Int64.max), \(0.1), \("é\0x"), \(payload))"
        )
        let entry = try #require(try ledger.pendingChanges(ledgerDB).first)
        #expect(entry.primaryKey == ["id": .blob(key)])
        #expect(entry.columns["amount"] == .integer(.max))
        #expect(entry.columns["ratio"] == .real(0.1))
        #expect(entry.columns["memo"] == .text("é\0x"))
        #expect(entry.columns["payload"] == .blob(payload))
    }

    @Test func writesWithRecordingOffAndMigrationStagesAreNotRecorded() throws {
        let db = try Database(path: directory.path("notes.sqlite"))
        let early = try ChangeLog.open(
            db, migrator: try Migrator(plan: NotesPlanWithCustomStage.self, releasedUpTo: "1.0.0"))
        try db.execute("INSERT INTO notes (id, body) VALUES ('a', '!urgent')")
        try db.withoutRecordingChanges { db in try db.execute("INSERT INTO notes (id, body) VALUES ('b', 'quiet')") }
        #expect(try early.pendingCount(db) == 1)
        // The 1.1.0 stage updates `pinned` on this connection, whose triggers are installed.
        let later = try ChangeLog.open(db, migrator: try Migrator(plan: NotesPlanWithCustomStage.self))
        #expect(try db.scalar(Int.self, "SELECT pinned FROM notes WHERE id = 'a'") == 1)
        #expect(try later.pendingCount(db) == 1)
        // The reinstalled triggers track the column the migration added.
        try db.execute("UPDATE notes SET pinned = 0 WHERE id = 'a'")
        #expect(summary(try later.pendingChanges(db)).last == "update notes 'a' [pinned]")
    }

    @Test func aSyncedTableKeyedByRowidIsRefusedWhenTrackingIsInstalled() throws {
        let db = try Database(path: directory.path("counters.sqlite"))
        var refused: ChangeLogError?
        do { _ = try ChangeLog.open(db, migrator: try Migrator(plan: CountersPlan.self)) } catch {
            refused = error as? ChangeLogError
        }
        #expect(refused?.kind == .unsuitableRowIdentity)
        #expect(refused?.table == "counters")
    }

    @Test func observersHearEachCommittedTransactionWithItsRowsOnce() throws {
        let (db, log) = try openReminders()
        let heard = Locked<[[String]]>([])
        log.observeCommits(on: db) { changes in
            let keys = changes.map {
                "\($0.table):\($0.primaryKey.values.map { "\($0)" }.sorted().joined(separator: ","))"
            }
            heard.withLock { $0.append(keys.sorted()) }
        }
        try db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x'), ('B', 'y')")
            try db.execute("UPDATE remindersLists SET name = 'z' WHERE id = 'A'")
        }
        try? db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('C', 'x')")
            throw CancellationError()
        }
        try db.withoutRecordingChanges { db in try db.execute("DELETE FROM remindersLists WHERE id = 'B'") }
        try db.execute("DELETE FROM remindersLists WHERE id = 'A'")
        #expect(
            heard.value == [
                ["remindersLists:text(\"A\")", "remindersLists:text(\"B\")"], ["remindersLists:text(\"A\")"],
            ])
        log.stopObservingCommits(on: db)
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('D', 'x')")
        #expect(heard.value.count == 2)
    }

    /// A stream of commits, the handler and the app's commit hook all hear each commit, and the
    /// handler is called once another connection sees what committed.
    @Test func commitStreamsTheHandlerAndTheAppsCommitHookCoexist() async throws {
        let (db, log) = try openReminders()
        let hooked = Locked(0)
        db.setCommitHook {
            hooked.withLock { $0 += 1 }
            return true
        }
        let other = try Database(path: db.path)
        let seenByOther = Locked<[Int]>([])
        // A connection of its own, used only on the writing thread, where the handler runs.
        nonisolated(unsafe) let reader = other
        log.observeCommits(on: db) { _ in
            let count = (try? reader.fetchValue(Int.self, "SELECT count(*) FROM remindersLists")) ?? -1
            seenByOther.withLock { $0.append(count) }
        }
        let commits = log.commits(on: db)
        // A stream whose iteration ended is told nothing more.
        let ended = log.commits(on: db)
        let iteration = Task { for await _ in ended {} }
        iteration.cancel()
        await iteration.value
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')")
        try db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('B', 'y')")
            try db.execute("UPDATE remindersLists SET name = 'z' WHERE id = 'A'")
        }
        var heard: [[String]] = []
        for await changes in commits {
            heard.append(changes.map { "\($0.primaryKey["id"]!)" }.sorted())
            if heard.count == 2 { break }
        }
        #expect(heard == [["text(\"A\")"], ["text(\"A\")", "text(\"B\")"]])
        #expect(seenByOther.value == [1, 2])
        #expect(hooked.value == 2)
    }

    @Test func aPoolRecordsWritesThroughItsWriter() throws {
        let pool = try DatabasePool(path: directory.path("pool.sqlite"))
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        let log = try pool.writeWithoutTransaction { db in try ChangeLog.open(db, migrator: migrator) }
        try pool.write { db in try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')") }
        try pool.write { db in try db.execute("UPDATE remindersLists SET name = 'y' WHERE id = 'A'") }
        #expect(try pool.write { db in try log.pendingCount(db) } == 2)
        #expect(try pool.read { db in try db.count("remindersLists") } == 1)
    }

    @Test func clocksKeepGrowingAcrossReopens() throws {
        let first: ChangeClock
        do {
            let (db, log) = try openReminders()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')")
            first = try #require(try log.pendingChanges(db).last).clock
        }
        let (db, log) = try openReminders()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('B', 'y')")
        let second = try #require(try log.pendingChanges(db).last).clock
        #expect(second > first)
    }
}

extension DatabaseValue {
    /// A short rendering for test summaries.
    fileprivate var sqlText: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value)'"
        case .blob(let data): "x'\(data.map { String(format: "%02x", $0) }.joined())'"
        }
    }
}
