import OfflineStore
import TestSupport
import Testing

/// NotesV2 with a local-only table.
enum RecordingNotesV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [NotesV2.Note.self, NotesV2.Folder.self, Draft.self]
    enum Draft: Model {
        static let tableDefinition = TableDefinition("drafts", sync: .localOnly, options: [.strict]) {
            Column("id", .text).primaryKey()
        }
    }
}

/// A stage that records some of its writes for sync and leaves the others to every peer's own run.
enum RecordingNotesPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, RecordingNotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: RecordingNotesV2.self,
            didMigrate: { context in
                try context.execute("INSERT INTO folders (id) VALUES ('inbox')")
                #expect(try context.recordChanges(in: "folders", where: "id = 'inbox'") == 1)
                // A delete is recorded by noting the row before deleting it.
                try context.recordChanges(in: "notes", where: "id = \("gone")")
                try context.execute("DELETE FROM notes WHERE id = 'gone'")
                // One column of a row that exists elsewhere.
                try context.execute("UPDATE notes SET body = 'moved' WHERE id = 'moved'")
                #expect(try context.recordChanges(in: "notes", columns: ["BODY"], where: "body = 'moved'") == 1)
                // Every peer runs these itself: not recorded.
                try context.execute("INSERT INTO folders (id) VALUES ('quiet')")
                try context.execute("UPDATE notes SET pinned = 1 WHERE id = 'kept'")
            })
    ]
}

/// A stage that asks to record the rows of a local-only table.
enum RecordingLocalOnlyPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, RecordingNotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: RecordingNotesV2.self,
            didMigrate: { context in
                try context.execute("INSERT INTO drafts (id) VALUES ('d')")
                try context.recordChanges(in: "drafts", where: "true")
            })
    ]
}

/// A stage that asks to record a change of a key column.
enum RecordingKeyColumnPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, RecordingNotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: RecordingNotesV2.self,
            didMigrate: { context in
                try context.execute("UPDATE notes SET id = 'renamed' WHERE id = 'kept'")
                try context.recordChanges(in: "notes", columns: ["id"], where: "id = 'renamed'")
            })
    ]
}

/// A stage whose writes are all recorded.
enum RecordingEverythingPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, RecordingNotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: RecordingNotesV2.self, recordsChanges: true,
            didMigrate: { context in
                try context.execute("INSERT INTO folders (id) VALUES ('all')")
                try context.execute("UPDATE notes SET body = 'edited' WHERE id = 'kept'")
                try context.execute("DELETE FROM notes WHERE id = 'gone'")
            })
    ]
}

/// A recording stage whose code fails after writing.
enum RecordingFailingPlan: MigrationPlan {
    struct Refused: Error {}
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, RecordingNotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: RecordingNotesV2.self, recordsChanges: true,
            didMigrate: { context in
                try context.execute("UPDATE notes SET body = 'edited' WHERE id = 'kept'")
                throw Refused()
            })
    ]
}

@Suite("Changes a migration stage records")
struct MigrationRecordedChangesTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    /// A store at 1.0.0 with two notes pushed, closed: the upgrade migrates on a fresh connection,
    /// which has no tracking triggers yet.
    private func storeAtOnePointZero(_ name: String = "notes.sqlite") throws -> String {
        let path = directory.path(name)
        let db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RecordingNotesPlan.self, releasedUpTo: "1.0.0"))
        try db.execute("INSERT INTO notes (id, body) VALUES ('kept', 'a'), ('gone', 'b'), ('moved', 'c')")
        if let last = try log.pendingChanges(db).last { try log.markPushed(db, upTo: last.sequence) }
        try db.close()
        return path
    }

    /// The queue as `operation table id columns`, sorted.
    private func pendingSummary(_ log: ChangeLog, _ db: Database) throws -> [String] {
        try log.pendingChanges(db).map { change in
            guard case .text(let id) = change.primaryKey["id"] else { return "\(change.primaryKey)" }
            return "\(change.operation.rawValue) \(change.table) \(id) "
                + change.columns.keys.sorted().joined(separator: ",")
        }.sorted()
    }

    @Test func rowsAStageRecordsArePushedAndItsOtherWritesAreNot() throws {
        let db = try Database(path: try storeAtOnePointZero())
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RecordingNotesPlan.self))
        let pending = try pendingSummary(log, db)
        #expect(pending == ["delete notes gone ", "insert folders inbox id", "update notes moved body"])
        #expect(try db.fetchAll(String.self, "SELECT id FROM folders ORDER BY id") == ["inbox", "quiet"])
        #expect(try log.coversEveryChange(db))
        // Opened again, nothing is recorded twice.
        try db.close()
        let again = try Database(path: directory.path("notes.sqlite"))
        #expect(
            try ChangeLog.open(again, migrator: try Migrator(plan: RecordingNotesPlan.self)).pendingCount(again) == 3)
    }

    @Test func aStageRunWithoutTheChangeLogLeavesItsRowsForTheNextOpen() throws {
        let path = try storeAtOnePointZero()
        let db = try Database(path: path)
        try Migrator(plan: RecordingNotesPlan.self).migrate(db)
        #expect(try ChangeLogCoverage.problems(in: db).contains { $0.contains("3 row change(s) a migration stage") })
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RecordingNotesPlan.self))
        let pending = try pendingSummary(log, db)
        #expect(pending == ["delete notes gone ", "insert folders inbox id", "update notes moved body"])
        #expect(try ChangeLogCoverage.problems(in: db).isEmpty)
    }

    /// Recorded the same whether the connection that migrates is fresh (no tracking triggers while
    /// the stage runs) or already tracked its writes; before, only the second recorded anything.
    @Test func aStageThatRecordsChangesHasItsWritesRecordedOnAnyConnection() throws {
        let fresh = try Database(path: try storeAtOnePointZero("fresh.sqlite"))
        let freshLog = try ChangeLog.open(fresh, migrator: try Migrator(plan: RecordingEverythingPlan.self))
        let expected = ["delete notes gone ", "insert folders all id", "update notes kept body"]
        let pending = try pendingSummary(freshLog, fresh)
        #expect(pending == expected)

        let tracked = try Database(path: directory.path("tracked.sqlite"))
        let early = try ChangeLog.open(
            tracked, migrator: try Migrator(plan: RecordingEverythingPlan.self, releasedUpTo: "1.0.0"))
        try tracked.execute("INSERT INTO notes (id, body) VALUES ('kept', 'a'), ('gone', 'b')")
        if let last = try early.pendingChanges(tracked).last { try early.markPushed(tracked, upTo: last.sequence) }
        let trackedLog = try ChangeLog.open(tracked, migrator: try Migrator(plan: RecordingEverythingPlan.self))
        let trackedPending = try pendingSummary(trackedLog, tracked)
        #expect(trackedPending == expected)
        // The noting triggers are gone with the stage: the app's own writes are recorded as usual.
        try tracked.execute("UPDATE notes SET body = 'again' WHERE id = 'kept'")
        #expect(try tracked.fetchValue(Int.self, "SELECT count(*) FROM main.ostore_stage_changes") == 0)
        #expect(try trackedLog.pendingCount(tracked) == 3)
    }

    @Test func aFailedRecordingStageLeavesNoNotesAndNoTriggers() throws {
        let db = try Database(path: try storeAtOnePointZero())
        let error = #expect(throws: MigrationError.self) {
            try ChangeLog.open(db, migrator: try Migrator(plan: RecordingFailingPlan.self))
        }
        #expect(error?.kind == .stageFailed)
        #expect(try db.fetchAll(String.self, "SELECT name FROM temp.sqlite_schema WHERE type = 'trigger'").isEmpty)
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM main.ostore_stage_changes") ?? 0 == 0)
        #expect(try db.fetchValue(String.self, "SELECT body FROM notes WHERE id = 'kept'") == "a")
    }

    @Test func recordingALocalOnlyTableOrAKeyColumnFailsTheStage() throws {
        let plans: [(plan: any MigrationPlan.Type, named: String)] = [
            (RecordingLocalOnlyPlan.self, "drafts"), (RecordingKeyColumnPlan.self, "notes.id"),
        ]
        for (index, (plan, named)) in plans.enumerated() {
            let db = try Database(path: try storeAtOnePointZero("store\(index).sqlite"))
            let error = #expect(throws: MigrationError.self) {
                try ChangeLog.open(db, migrator: try Migrator(plan: plan))
            }
            #expect(error?.kind == .misuse)
            #expect(error?.stage != nil && error?.message.contains(named) == true)
            // The stage rolled back.
            #expect(try !db.tableExists("drafts"))
            #expect(try db.fetchAll(String.self, "SELECT id FROM notes ORDER BY id") == ["gone", "kept", "moved"])
        }
    }
}
