import Foundation
import OfflineStore
import RemindersModel
import Testing

/// Two versions with the same tables (`NotesV1`'s): the stage between them only changes data.
private enum BackfillV1_1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = NotesV1.models
}

private enum BackfillPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, BackfillV1_1.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: BackfillV1_1.self,
            didMigrate: { context in
                try context.execute("UPDATE notes SET body = upper(body) WHERE body <> upper(body)")
            })
    ]
}

@Suite("Migrations on the Reminders plan")
struct MigrationTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    func open(_ name: String = "reminders.sqlite") throws -> Database {
        try Database(path: directory.path(name))
    }

    func insertV1Rows(_ db: Database, count: Int = 3) throws {
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L1', 'Home')")
        for index in 0..<count {
            let dueDate = "2026-12-0\(index % 9 + 1)"
            try db.execute(
                "INSERT INTO reminders (id, title, listID, dueDate) VALUES (\("R\(index)"), \("Task \(index)"), 'L1', \(dueDate))"
            )
        }
    }

    @Test func freshInstallReachesTheLatestVersionAndMatchesTheDeclaration() throws {
        let db = try open()
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try migrator.migrate(db)
        #expect(try migrator.currentVersion(db) == "2.1.0")
        #expect(try migrator.hasCompletedMigrations(db))
        #expect(try migrator.pendingStages(db).isEmpty)
        let live = try SchemaSnapshot(liveDatabase: db)
        let declared = try RemindersSchemaV2_1.snapshot()
        #expect(live.differences(toReach: declared).isEmpty, "\(live.differences(toReach: declared))")
        #expect(try migrator.appliedStages(db).map(\.kind) == ["create", "lightweight", "custom", "lightweight"])
    }

    @Test func upgradeFromEachVersionKeepsEveryRow() throws {
        for start in ["1.0.0", "1.1.0"] as [Schema.Version] {
            let db = try open("from-\(start).sqlite")
            try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: start).migrate(db)
            try insertV1Rows(db, count: 5)
            try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('orphan', 'Lost list', 'gone')")
            try Migrator(plan: RemindersMigrationPlan.self).migrate(db)
            #expect(try db.count("reminders") == 6)
            #expect(try db.scalar(Double.self, "SELECT dueAt FROM reminders WHERE id = 'R0'") == 1_796_083_200)
            #expect(
                try db.scalar(String.self, "SELECT name FROM remindersLists WHERE id = 'recovered-gone'")
                    == "Recovered list")
            #expect(try db.scalar(String.self, "SELECT listID FROM reminders WHERE id = 'orphan'") == "recovered-gone")
            #expect(try db.count("reminderSearch") == 6)
            #expect(try db.fetchAll("PRAGMA foreign_key_check").isEmpty)
            #expect(try db.foreignKeys(on: "reminders").count == 1)
            let live = try SchemaSnapshot(liveDatabase: db)
            #expect(live.differences(toReach: try RemindersSchemaV2_1.snapshot()).isEmpty)
        }
    }

    @Test func runningThePlanTwiceChangesNothing() throws {
        let db = try open()
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try migrator.migrate(db)
        let before = try SchemaSnapshot(liveDatabase: db).canonicalText
        let stages = try migrator.appliedStages(db)
        try migrator.migrate(db)
        try Migrator(plan: RemindersMigrationPlan.self).migrate(try open())
        #expect(try SchemaSnapshot(liveDatabase: db).canonicalText == before)
        #expect(try migrator.appliedStages(db) == stages)
    }

    @Test func aDroppedTableIsRecreatedByReRunningItsStage() throws {
        let db = try open()
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try migrator.migrate(db)
        try db.execute("DROP TABLE reminderTags")
        try db.execute("DROP INDEX reminders_listID")
        try migrator.migrate(db)
        #expect(try db.tableExists("reminderTags"))
        #expect(try db.indexes(on: "reminders").contains { $0.name == "reminders_listID" })
        #expect(try migrator.appliedStages(db)[1].runs == 2)
    }

    @Test func aWipedLedgerIsAdoptedWhenTheSchemaMatchesAVersion() throws {
        let db = try open()
        try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: "1.1.0").migrate(db)
        try insertV1Rows(db)
        try db.execute("DROP TABLE ostore_migrations")
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try migrator.migrate(db)
        let applied = try migrator.appliedStages(db)
        #expect(applied.map(\.adopted) == [true, true, false, false])
        #expect(try db.count("reminders") == 3)
    }

    /// Regression: adoption took the newest version the schema matched, so a database at 1.0.0
    /// whose ledger was wiped was recorded at 1.1.0 and the data-only stage to 1.1.0 never ran.
    @Test func aWipedLedgerMatchingSeveralVersionsIsAdoptedAtTheOldestSoLaterStagesRun() throws {
        let db = try open()
        try Migrator(plan: BackfillPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.execute("INSERT INTO notes (id, body) VALUES ('a', 'hello')")
        try db.execute("DROP TABLE ostore_migrations")
        let migrator = try Migrator(plan: BackfillPlan.self)
        try migrator.migrate(db)
        #expect(try db.scalar(String.self, "SELECT body FROM notes") == "HELLO")
        #expect(try migrator.appliedStages(db).map(\.adopted) == [true, false])

        // Adopted at 1.0.0 when it already was at 1.1.0: the idempotent stage runs again, harmlessly.
        try db.execute("DROP TABLE ostore_migrations")
        try migrator.migrate(db)
        #expect(try db.scalar(String.self, "SELECT body FROM notes") == "HELLO")
        #expect(try migrator.hasCompletedMigrations(db))
    }

    /// Regression: a dropped column that ADD COLUMN cannot restore (NOT NULL without DEFAULT) was
    /// skipped by the re-run, and migrate succeeded on a database without it.
    @Test func aLostColumnThatCannotBeAddedBackIsRefusedUntouched() throws {
        let db = try open()
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try migrator.migrate(db)
        try insertV1Rows(db)
        try db.execute("ALTER TABLE reminders DROP COLUMN title")
        let ledger = try migrator.appliedStages(db)
        for _ in 0..<2 {
            #expect {
                try migrator.migrate(db)
            } throws: { error in
                let error = error as? MigrationError
                return error?.kind == .nonAdditiveChange && error!.message.contains("lost reminders.title")
                    && error!.differences.map(\.column) == ["title"]
            }
        }
        #expect(try migrator.appliedStages(db) == ledger)
        #expect(try db.count("reminders") == 3)

        // A column ADD COLUMN can restore is re-added by re-running the stage that declared it.
        let other = try open("other.sqlite")
        try migrator.migrate(other)
        try insertV1Rows(other)
        try other.execute("ALTER TABLE reminders DROP COLUMN notes")
        try migrator.migrate(other)
        #expect(try other.scalar(String.self, "SELECT notes FROM reminders WHERE id = 'R0'") == "")
        #expect(
            try SchemaSnapshot(liveDatabase: other).differences(toReach: try RemindersSchemaV2_1.snapshot()).isEmpty)
    }

    @Test func anUnrecognizedSchemaWithoutLedgerIsRefusedUntouched() throws {
        let db = try open()
        try db.execute("CREATE TABLE reminders (id TEXT PRIMARY KEY, title TEXT)")
        #expect {
            try Migrator(plan: RemindersMigrationPlan.self).migrate(db)
        } throws: { error in
            (error as? MigrationError)?.kind == .unrecognizedSchema
        }
        #expect(try !db.tableExists("ostore_migrations"))
    }

    @Test func aDatabaseFromANewerReleaseIsRefused() throws {
        let db = try open()
        try Migrator(plan: RemindersMigrationPlan.self).migrate(db)
        let old = try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: "1.1.0")
        #expect {
            try old.migrate(db)
        } throws: { error in
            let error = error as? MigrationError
            return error?.kind == .databaseNewerThanPlan && error!.message.contains("2.1.0")
        }
    }

    @Test func aRebuildAndABatchedBackfillReportRowsDoneOfRowsTotal() throws {
        let path = directory.path("progress.sqlite")
        try MigrationCrashTests.makeDatabaseAtVersion1Point1(at: path, rows: 25_000)
        let events = Locked<[String]>([])
        var options = Migrator.Options()
        options.progress = { event in
            if case .rows(_, let operation, let done, let total) = event {
                events.withLock { $0.append("\(operation) \(done)/\(total)") }
            }
        }
        try Migrator(plan: RemindersMigrationPlan.self, options: options).migrate(try Database(path: path))
        #expect(
            events.value.filter { $0.hasPrefix("rebuild") } == [
                "rebuild reminders 0/25000", "rebuild reminders 10000/25000", "rebuild reminders 20000/25000",
                "rebuild reminders 25000/25000",
            ])
    }

    @Test func aPoolMigratesThroughItsWriterAndItsReadersSeeTheNewSchema() throws {
        let pool = try DatabasePool(path: directory.path("pool.sqlite"))
        let before = try pool.read { db in try db.tableExists("reminders") }
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try pool.writeWithoutTransaction { db in try migrator.migrate(db) }
        let columns = try pool.read { db in try db.columns(in: "reminders").map(\.name) }
        #expect(!before)
        #expect(columns.contains("dueAt"))
        #expect(try pool.read { db in try migrator.hasCompletedMigrations(db) })
    }
}
