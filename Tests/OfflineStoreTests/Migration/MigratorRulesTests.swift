import Dispatch
import Foundation
import OfflineStore
import Testing

/// Small plans that exercise the migrator's rules one at a time.
enum NotesV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Note.self]
    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("body", .text).notNull()
        }
    }
}

enum NotesV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [Note.self, Folder.self]
    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("body", .text).notNull()
            Column("pinned", .integer).notNull().defaults(0)
            Index("notes_pinned", on: "pinned", where: "pinned = 1")
        }
    }
    enum Folder: Model {
        static let tableDefinition = TableDefinition("folders", options: [.strict]) {
            Column("id", .text).primaryKey()
        }
    }
}

/// NotesV1 edited after it shipped: a table was slipped into the released version.
enum NotesV1Edited: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [NotesV1.Note.self, NotesV2.Folder.self]
}

/// A "lightweight" successor that drops a column: never additive.
enum NotesV2DroppingBody: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [Note.self]
    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
        }
    }
}

enum NotesPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV1.self, toVersion: NotesV2.self)]
}

enum NotesPlanWithEditedV1: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1Edited.self, NotesV2.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV1Edited.self, toVersion: NotesV2.self)]
}

enum NotesPlanDroppingAColumn: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2DroppingBody.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV1.self, toVersion: NotesV2DroppingBody.self)]
}

enum NotesPlanWithAGap: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2.self]
    static let stages: [MigrationStage] = []
}

enum NotesPlanOutOfOrder: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV2.self, NotesV1.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV2.self, toVersion: NotesV1.self)]
}

/// Records what a custom stage saw.
let customStageObservations = Locked<[String]>([])

enum NotesPlanWithCustomStage: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: NotesV2.self,
            willMigrate: { context in
                let hasPinned = try context.columnExists("pinned", in: "notes")
                customStageObservations.withLock {
                    $0.append("will fresh=\(context.isFreshDatabase) pinned=\(hasPinned)")
                }
            },
            didMigrate: { context in
                try context.execute("UPDATE notes SET pinned = 1 WHERE body LIKE '!%'")
                let hasPinned = try context.columnExists("pinned", in: "notes")
                customStageObservations.withLock {
                    $0.append("did fresh=\(context.isFreshDatabase) pinned=\(hasPinned)")
                }
            })
    ]
}

enum NotesV1_2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.2.0"
    static let models: [any Model.Type] = NotesV2.models
}

/// NotesPlan with its shipped 1.1.0 stage replaced: the ledger's position 1 no longer lines up.
enum NotesPlanSkipping1_1: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV1_2.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV1.self, toVersion: NotesV1_2.self)]
}

enum NotesPlanAddingAnUndeclaredIndex: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: NotesV2.self,
            didMigrate: { context in try context.execute("CREATE INDEX IF NOT EXISTS notes_body ON notes (body)") })
    ]
}

enum NotesPlanClearingNotes: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: NotesV2.self,
            didMigrate: { context in try context.execute("DELETE FROM notes") })
    ]
}

enum NotesPlanClearingNotesKnowingly: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, NotesV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: NotesV2.self,
            acknowledgingLintRules: ["unbounded-write-on-synced-table"],
            didMigrate: { context in try context.execute("DELETE FROM notes") })
    ]
}

@Suite("Migrator rules", .serialized)
struct MigratorRulesTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    func migrationError(_ body: () throws -> Void) -> MigrationError? {
        do {
            try body()
            return nil
        } catch {
            return error as? MigrationError
        }
    }

    @Test func invalidPlansAreRefusedBeforeAnyDatabaseIsTouched() {
        let dropping = migrationError { _ = try Migrator(plan: NotesPlanDroppingAColumn.self) }
        #expect(dropping?.kind == .nonAdditiveChange)
        #expect(dropping?.differences.first?.column == "body")
        #expect(dropping?.description.contains("never drops a column") == true)
        let gap = migrationError { _ = try Migrator(plan: NotesPlanWithAGap.self) }
        #expect(gap?.kind == .invalidPlan)
        #expect(gap?.message.contains("no stage leads to 1.1.0") == true)
        let order = migrationError { _ = try Migrator(plan: NotesPlanOutOfOrder.self) }
        #expect(order?.message.contains("out of order") == true)
    }

    @Test func anEditedShippedStageStopsTheOpenAndNamesBothChecksums() throws {
        let path = directory.path("notes.sqlite")
        let db = try Database(path: path)
        try Migrator(plan: NotesPlan.self).migrate(db)
        let recorded = try Migrator(plan: NotesPlan.self).appliedStages(db)[0].checksum
        let edited = try Migrator(plan: NotesPlanWithEditedV1.self)
        let error = migrationError { try edited.migrate(db) }
        #expect(error?.kind == .checksumMismatch)
        #expect(error?.stage?.contains("1.0.0") == true)
        #expect(error?.message.contains(recorded) == true)
        let planChecksum = try edited.pendingStages(try Database.inMemory())[0].checksum
        #expect(planChecksum != recorded)
        #expect(error?.message.contains(planChecksum) == true)
        #expect(try Migrator(plan: NotesPlan.self).hasCompletedMigrations(db))
    }

    @Test func developmentModeErasesLoudlyInsteadOfRefusing() throws {
        let db = try Database(path: directory.path("dev.sqlite"))
        try Migrator(plan: NotesPlan.self).migrate(db)
        try db.execute("INSERT INTO notes (id, body) VALUES ('n1', 'hello')")
        var options = Migrator.Options()
        options.eraseDatabaseOnSchemaChange = true
        let migrator = try Migrator(plan: NotesPlanWithEditedV1.self, options: options)
        try migrator.migrate(db)
        #expect(try migrator.hasCompletedMigrations(db))
        #expect(try db.count("notes") == 0)
    }

    @Test func aCustomStageSeesWhetherTheDatabaseWasFreshAndBothSchemas() throws {
        customStageObservations.withLock { $0 = [] }
        let fresh = try Database(path: directory.path("fresh.sqlite"))
        try Migrator(plan: NotesPlanWithCustomStage.self).migrate(fresh)
        let upgraded = try Database(path: directory.path("upgraded.sqlite"))
        try Migrator(plan: NotesPlanWithCustomStage.self, releasedUpTo: "1.0.0").migrate(upgraded)
        try upgraded.execute("INSERT INTO notes (id, body) VALUES ('a', '!urgent'), ('b', 'calm')")
        try Migrator(plan: NotesPlanWithCustomStage.self).migrate(upgraded)
        #expect(
            customStageObservations.value == [
                "will fresh=true pinned=false", "did fresh=true pinned=true",
                "will fresh=false pinned=false", "did fresh=false pinned=true",
            ])
        #expect(try upgraded.scalar(Int.self, "SELECT pinned FROM notes WHERE id = 'a'") == 1)
        #expect(try upgraded.scalar(Int.self, "SELECT pinned FROM notes WHERE id = 'b'") == 0)
    }

    @Test func aDryRunReturnsTheSQLAndChangesNothing() throws {
        let db = try Database(path: directory.path("dry.sqlite"))
        try Migrator(plan: NotesPlan.self, releasedUpTo: "1.0.0").migrate(db)
        let before = try SchemaSnapshot(liveDatabase: db, includingReservedTables: true).canonicalText
        let previews = try Migrator(plan: NotesPlan.self).dryRun(db)
        #expect(previews.map(\.stage.toVersion) == ["1.1.0"])
        let statements = previews[0].statements.joined(separator: "\n")
        #expect(statements.contains("ALTER TABLE \"notes\" ADD COLUMN \"pinned\" INTEGER NOT NULL DEFAULT 0"))
        #expect(statements.contains("CREATE TABLE IF NOT EXISTS \"folders\""))
        #expect(statements.contains("CREATE INDEX IF NOT EXISTS \"notes_pinned\""))
        #expect(try SchemaSnapshot(liveDatabase: db, includingReservedTables: true).canonicalText == before)
        #expect(try Migrator(plan: NotesPlan.self).pendingStages(db).count == 1)
    }

    @Test func progressReportsEachStageStartAndEnd() throws {
        let events = Locked<[String]>([])
        var options = Migrator.Options()
        options.progress = { event in
            events.withLock {
                switch event {
                case .stageStarted(let stage): $0.append("start \(stage)")
                case .stageFinished(let stage, _): $0.append("end \(stage)")
                case .rows: break
                }
            }
        }
        try Migrator(plan: NotesPlan.self, options: options).migrate(try Database(path: directory.path("p.sqlite")))
        #expect(
            events.value == [
                "start create 1.0.0 (create)", "end create 1.0.0 (create)",
                "start 1.0.0 → 1.1.0 (lightweight)", "end 1.0.0 → 1.1.0 (lightweight)",
            ])
    }

    @Test func theMigratorRefusesToRunInsideATransaction() throws {
        let db = try Database(path: directory.path("tx.sqlite"))
        let error = migrationError {
            try db.transaction { db in try Migrator(plan: NotesPlan.self).migrate(db) }
        }
        #expect(error?.kind == .misuse)
    }

    @Test func twoConnectionsMigratingAtOnceRunEachStageOnce() throws {
        let path = directory.path("race.sqlite")
        for _ in 0..<5 {
            try? FileManager.default.removeItem(atPath: path)
            let group = DispatchGroup()
            let failures = Locked<[String]>([])
            for _ in 0..<2 {
                DispatchQueue.global().async(group: group) {
                    do {
                        try Migrator(plan: NotesPlan.self).migrate(try Database(path: path))
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
            #expect(group.wait(timeout: .now() + 30) == .success)
            #expect(failures.value.isEmpty, "\(failures.value)")
            let stages = try Migrator(plan: NotesPlan.self).appliedStages(try Database(path: path))
            #expect(stages.map(\.runs) == [1, 1])
        }
    }

    @Test func aStageBreakingANeverLintRuleFailsUnlessItAcknowledgesTheRule() throws {
        let db = try Database(path: directory.path("lint.sqlite"))
        try Migrator(plan: NotesPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.execute("INSERT INTO notes (id, body) VALUES ('n1', 'keep me')")
        let error = migrationError { try Migrator(plan: NotesPlanClearingNotes.self).migrate(db) }
        #expect(error?.kind == .lintViolation)
        #expect(error?.message.contains("unbounded-write-on-synced-table") == true)
        #expect(error?.fix?.contains("acknowledgingLintRules") == true)
        #expect(try db.count("notes") == 1)
        #expect(try Migrator(plan: NotesPlan.self).currentVersion(db) == "1.0.0")

        try Migrator(plan: NotesPlanClearingNotesKnowingly.self).migrate(db)
        #expect(try db.count("notes") == 0)
    }

    @Test func aRemovedOrReplacedShippedStageIsRefused() throws {
        let db = try Database(path: directory.path("removed.sqlite"))
        try Migrator(plan: NotesPlan.self).migrate(db)
        let replaced = migrationError { try Migrator(plan: NotesPlanSkipping1_1.self).migrate(db) }
        #expect(replaced?.kind == .stageRemovedOrReordered)
        #expect(replaced?.message.contains("1.0.0 → 1.1.0") == true)
        let removed = migrationError { try Migrator(plan: NotesPlan.self, releasedUpTo: "1.0.0").migrate(db) }
        #expect(removed?.kind == .databaseNewerThanPlan)
        #expect(removed?.message.contains("1.1.0") == true)
        #expect(try Migrator(plan: NotesPlan.self).hasCompletedMigrations(db))
    }

    @Test func aStageThatLeavesAnUndeclaredObjectIsRolledBack() throws {
        let db = try Database(path: directory.path("undeclared.sqlite"))
        try Migrator(plan: NotesPlan.self, releasedUpTo: "1.0.0").migrate(db)
        let error = migrationError { try Migrator(plan: NotesPlanAddingAnUndeclaredIndex.self).migrate(db) }
        #expect(error?.kind == .schemaMismatchAfterStage)
        #expect(error?.differences.map(\.index) == ["notes_body"])
        #expect(try !db.indexes(on: "notes").contains { $0.name == "notes_body" })
        #expect(try Migrator(plan: NotesPlan.self).currentVersion(db) == "1.0.0")
    }
}
