import Foundation
import OfflineStore
import OfflineStoreTesting
import RemindersModel
import Testing

// MARK: - Small plans, each broken in one way

/// Notes, then an `archived` flag; the stage loses every other note.
private enum LossyV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [Note.self]

    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("body", .text).notNull()
            Column("archived", .integer).notNull().defaults(0)
        }
    }
}

private enum LossyPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, LossyV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: LossyV2.self,
            didMigrate: { context in try context.execute("DELETE FROM notes WHERE rowid % 2 = 0") })
    ]
}

/// Items and labels, then `items.x`, added by stage code that does not check whether it already ran.
private enum RepeatV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Item.self, Label.self]

    enum Item: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text)
        }
    }

    enum Label: Model {
        static let tableDefinition = TableDefinition("labels", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
        }
    }
}

private enum RepeatV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [Item.self, RepeatV1.Label.self]

    enum Item: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text)
            Column("x", .text)
        }
    }
}

private enum RepeatPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [RepeatV1.self, RepeatV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: RepeatV1.self, toVersion: RepeatV2.self,
            willMigrate: { context in try context.database.execute("ALTER TABLE items ADD COLUMN x TEXT") })
    ]
}

/// Documents, then a `subtitle`; the stages also add a `scratch` column nobody declares.
private enum DocumentsV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Document.self]

    enum Document: Model {
        static let tableDefinition = TableDefinition("docs", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
        }
    }
}

private enum DocumentsV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [Document.self]

    enum Document: Model {
        static let tableDefinition = TableDefinition("docs", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("subtitle", .text)
        }
    }
}

/// The undeclared column comes from willMigrate, before the migrator reconciles: it refuses.
private enum ExtraColumnBeforePlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [DocumentsV1.self, DocumentsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: DocumentsV1.self, toVersion: DocumentsV2.self,
            willMigrate: { context in
                if try context.tableExists("docs"), try !context.columnExists("scratch", in: "docs") {
                    try context.database.execute("ALTER TABLE docs ADD COLUMN scratch TEXT")
                }
            })
    ]
}

/// The undeclared column comes from didMigrate, on upgrades only: the migrator commits it.
private enum ExtraColumnAfterPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [DocumentsV1.self, DocumentsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: DocumentsV1.self, toVersion: DocumentsV2.self,
            didMigrate: { context in
                if !context.isFreshDatabase, try !context.columnExists("scratch", in: "docs") {
                    try context.database.execute("ALTER TABLE docs ADD COLUMN scratch TEXT")
                }
            })
    ]
}

/// Owners and their pets, then an owner nickname; the stage deletes an owner its pets point at.
private enum PetsV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Owner.self, Pet.self]

    enum Owner: Model {
        static let tableDefinition = TableDefinition("owners", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }

    enum Pet: Model {
        static let tableDefinition = TableDefinition("pets", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("ownerID", .text).notNull().references("owners", "id")
            Column("name", .text).notNull()
        }
    }
}

private enum PetsV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [Owner.self, PetsV1.Pet.self]

    enum Owner: Model {
        static let tableDefinition = TableDefinition("owners", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            Column("nickname", .text)
        }
    }
}

private enum OrphanPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [PetsV1.self, PetsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: PetsV1.self, toVersion: PetsV2.self,
            didMigrate: { context in
                try context.execute("DELETE FROM owners WHERE rowid = (SELECT min(rowid) FROM owners)")
            })
    ]
}

/// A lightweight stage that changes a column's type: the migrator refuses the plan itself.
private enum RetypedV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [Note.self]

    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("body", .blob).notNull()
        }
    }
}

private enum RetypedPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, RetypedV2.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: NotesV1.self, toVersion: RetypedV2.self)]
}

/// Two versions and no stage between them.
private enum GapPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, LossyV2.self]
    static let stages: [MigrationStage] = []
}

/// Two versions with the same tables: the stage between them only changes data.
private enum ShoutingV1_1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [NotesV1.Note.self]
}

private enum DataOnlyPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [NotesV1.self, ShoutingV1_1.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: NotesV1.self, toVersion: ShoutingV1_1.self,
            didMigrate: { context in
                try context.execute("UPDATE notes SET body = upper(body) WHERE body <> upper(body)")
            })
    ]
}

/// A table with every constraint the generator must honour.
private enum ConstrainedV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Project.self, Task.self, Attachment.self, Search.self]

    enum Project: Model {
        static let tableDefinition = TableDefinition("projects", options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("code", .text).notNull().unique().check("length(code) > 2")
            Column("status", .text).notNull().check("status IN ('open', 'paused', 'closed')")
            Column("budget", .real).check("budget >= 0")
            Column("parentID", .integer).references("projects", "id")
        }
    }

    enum Task: Model {
        static let tableDefinition = TableDefinition("tasks", options: [.strict, .withoutRowID]) {
            Column("projectID", .integer).notNull().references("projects", "id", onDelete: .cascade)
            Column("number", .integer).notNull().check("number > 0")
            Column("priority", .integer).notNull().defaults(3).check("priority BETWEEN 1 AND 5")
            Column("startsAt", .real).notNull()
            Column("endsAt", .real).notNull()
            Column("token", .blob).notNull()
            PrimaryKey("projectID", "number")
            Check("startsAt <= endsAt")
            Index("tasks_token", on: "token", unique: true)
        }
    }

    enum Attachment: Model {
        static let tableDefinition = TableDefinition("attachments") {
            Column("name", .text).notNull()
            Column("size", .integer).check("size BETWEEN -10 AND -1")
            Column("kind", .text).notNull().defaults("file").check("kind = 'file'")
            Unique("name", "kind")
        }
    }

    enum Search: Model {
        static let tableDefinition = TableDefinition(fts5: "projectSearch", columns: ["body"], unindexed: ["code"])
    }
}

private enum ConstrainedPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ConstrainedV1.self]
    static let stages: [MigrationStage] = []
}

// MARK: - Tests

@Suite("MigrationPlanVerifier")
struct MigrationPlanVerifierTests {
    @Test func theRemindersPlanVerifiesClean() throws {
        let report = try MigrationPlanVerifier(plan: RemindersMigrationPlan.self).verify()
        #expect(report.problems.isEmpty, "\(report)")
        let scenarios = Set(report.scenarios)
        for expected in [
            "fresh install", "upgrade from 1.0.0", "upgrade from 1.1.0", "reopen at 2.1.0 (the latest)",
            "stage 1.1.0 → 2.0.0 run again on a database it migrated", "ledger wiped at 1.1.0",
            "half-migrated 1.1.0 → 2.0.0: column reminders.dueAt already added",
            "half-migrated 1.0.0 → 1.1.0: table tags already created", "table reminders dropped at 2.0.0",
            "table reminderSearch dropped at 2.0.0", "database file deleted at 2.1.0",
        ] {
            #expect(scenarios.contains(expected), "missing scenario \(expected) in \(report.scenarios)")
        }
        #expect(report.scenariosRun == report.scenarios.count)
        #expect(report.scenariosRun >= 30)
        #expect(report.description.contains("no problems"))
    }

    @Test func aStageThatDeletesRowsIsReportedAsRowsLost() throws {
        let report = try MigrationPlanVerifier(plan: LossyPlan.self).verify()
        let problem = try #require(
            report.problems.first { $0.scenario == "upgrade from 1.0.0" && $0.kind == .rowsLost }, "\(report)")
        #expect(problem.table == "notes")
        #expect(problem.version == "1.0.0")
        #expect(problem.message.hasPrefix("10 of 20 rows are gone after migrating to 2.0.0"), "\(problem)")
        #expect(problem.details.first?.hasPrefix("missing id: '") == true, "\(problem)")
        // The fresh install has no rows to lose, and nothing else breaks.
        #expect(report.problems(inScenario: "fresh install").isEmpty)
        #expect(report.problems.allSatisfy { $0.kind == .rowsLost && $0.table == "notes" }, "\(report)")
        #expect(report.description.contains("[upgrade from 1.0.0] rowsLost in notes: 10 of 20 rows"))
    }

    @Test func aStageThatIsNotIdempotentFailsWhenItRunsAgain() throws {
        let report = try MigrationPlanVerifier(plan: RepeatPlan.self).verify()
        let rerun = try #require(
            report.problems.first {
                $0.scenario == "stage 1.0.0 → 2.0.0 run again on a database it migrated"
            }, "\(report)")
        #expect(rerun.kind == .migrationFailed)
        #expect(rerun.version == "2.0.0")
        #expect(rerun.message.contains("in stage 1.0.0 → 2.0.0 (custom)"), "\(rerun)")
        #expect(rerun.message.contains("duplicate column name: x"), "\(rerun)")
        #expect(rerun.message.contains("ALTER TABLE items ADD COLUMN x"), "\(rerun)")

        let halfMigrated = try #require(
            report.problems.first { $0.scenario == "half-migrated 1.0.0 → 2.0.0: column items.x already added" },
            "\(report)")
        #expect(halfMigrated.kind == .migrationFailed)
        #expect(halfMigrated.table == "items")

        // Dropping labels re-runs the plan from its creation, stage included, on the migrated items.
        let dropped = try #require(
            report.problems.first { $0.scenario == "table labels dropped at 2.0.0" }, "\(report)")
        #expect(dropped.kind == .migrationFailed)
        #expect(dropped.table == "labels")
        #expect(dropped.message.contains("duplicate column name: x"))

        // The paths that run the stage once are fine.
        #expect(report.problems(inScenario: "fresh install").isEmpty)
        #expect(report.problems(inScenario: "upgrade from 1.0.0").isEmpty)
    }

    @Test func anUndeclaredColumnAddedBeforeTheReconcileIsRefusedAndReported() throws {
        let report = try MigrationPlanVerifier(plan: ExtraColumnBeforePlan.self).verify()
        for scenario in ["fresh install", "upgrade from 1.0.0"] {
            let problem = try #require(report.problems(inScenario: scenario).first, "\(report)")
            #expect(problem.kind == .migrationFailed)
            #expect(problem.table == "docs")
            #expect(problem.column == "scratch")
            #expect(problem.message.contains("docs.scratch: unexpectedColumn"), "\(problem)")
        }
    }

    @Test func anUndeclaredColumnAddedOnUpgradeIsRefusedByTheMigratorAndReported() throws {
        // The migrator compares the schema with the declaration before it records a stage, so a
        // stage that adds an undeclared column in didMigrate fails instead of being committed.
        let report = try MigrationPlanVerifier(plan: ExtraColumnAfterPlan.self).verify()
        let problems = report.problems(inScenario: "upgrade from 1.0.0")
        let refused = try #require(problems.first { $0.kind == .migrationFailed }, "\(report)")
        #expect(refused.table == "docs")
        #expect(refused.column == "scratch")
        #expect(refused.message.contains("differs from the declared schema"), "\(refused)")
        // The fresh install never reaches the undeclared column.
        #expect(report.problems(inScenario: "fresh install").isEmpty, "\(report)")
    }

    @Test func aStageThatLeavesAForeignKeyOrphanIsReported() throws {
        let report = try MigrationPlanVerifier(plan: OrphanPlan.self).verify()
        let problem = try #require(
            report.problems.first { $0.scenario == "upgrade from 1.0.0" && $0.kind == .foreignKeyViolation },
            "\(report)")
        #expect(problem.table == "pets")
        #expect(problem.message.contains("violate foreign keys"), "\(problem)")
        #expect(
            problem.details.contains {
                $0.hasPrefix("pets rowid ") && $0.hasSuffix("references a missing row of owners")
            })
        // On a fresh install there is no owner to delete.
        #expect(report.problems(inScenario: "fresh install").isEmpty, "\(report)")
    }

    @Test func aRefusedPlanIsOneProblemNamingTheColumn() throws {
        let report = try MigrationPlanVerifier(plan: RetypedPlan.self).verify()
        #expect(report.scenariosRun == 1)
        let problem = try #require(report.problems.first)
        #expect(report.problems.count == 1, "\(report)")
        #expect(problem.kind == .invalidPlan)
        #expect(problem.scenario == "plan validation")
        #expect(problem.table == "notes")
        #expect(problem.column == "body")
        #expect(problem.message.contains("columnTypeChanged"), "\(problem)")

        let gap = try MigrationPlanVerifier(plan: GapPlan.self).verify()
        #expect(gap.problems.map(\.kind) == [.invalidPlan])
        #expect(gap.problems.first?.message.contains("no stage leads to 2.0.0") == true, "\(gap)")
    }

    @Test func aDataOnlyStageRunsOnADatabaseWhoseLedgerWasWiped() throws {
        // The database at 1.0.0 also matches 1.1.0 exactly; adopting it as 1.1.0 would skip the backfill.
        let report = try MigrationPlanVerifier(plan: DataOnlyPlan.self).verify()
        #expect(report.problems.isEmpty, "\(report)")
        #expect(report.scenarios.contains("ledger wiped at 1.0.0"))
    }

    @Test func generatedRowsHonourEveryConstraint() throws {
        let report = try MigrationPlanVerifier(plan: ConstrainedPlan.self, rowsPerTable: 30).verify()
        #expect(report.problems.isEmpty, "\(report)")
    }

    @Test func aSeedReplacesGeneratedRows() throws {
        let versions = Locked<[Schema.Version]>([])
        let report = try MigrationPlanVerifier(plan: LossyPlan.self) { db, version in
            versions.withLock { $0.append(version) }
            for id in ["a", "b", "c", "d"] {
                try db.execute("INSERT INTO notes (id, body) VALUES (\(id), \("Note \(id)"))")
            }
        }.verify()
        #expect(versions.value == ["1.0.0", "2.0.0"])
        let problem = try #require(
            report.problems.first { $0.scenario == "upgrade from 1.0.0" && $0.kind == .rowsLost }, "\(report)")
        #expect(problem.message.hasPrefix("2 of 4 rows are gone"), "\(problem)")
        #expect(problem.details == ["missing id: 'b', 'd'"])

        let failing = try MigrationPlanVerifier(plan: LossyPlan.self) { db, _ in
            try db.execute("INSERT INTO missing (id) VALUES (1)")
        }.verify()
        let seedProblem = try #require(failing.problems.first { $0.kind == .seedFailed }, "\(failing)")
        #expect(seedProblem.scenario == "install 1.0.0 with rows")
        #expect(seedProblem.message.contains("no such table: missing"), "\(seedProblem)")
    }

    @Test func theSameSeedGivesTheSameReport() throws {
        let first = try MigrationPlanVerifier(plan: LossyPlan.self, rowsPerTable: 7, randomSeed: 42).verify()
        let second = try MigrationPlanVerifier(plan: LossyPlan.self, rowsPerTable: 7, randomSeed: 42).verify()
        #expect(first.problems == second.problems)
        #expect(first.scenarios == second.scenarios)
    }
}
