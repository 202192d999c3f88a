import Foundation
import OfflineStore
import OfflineStoreTesting
import Testing

// docs/writing-migrations.md: its Swift blocks are the regions below, verbatim; the tests run
// them and break each rule the guide lists, checking the error the guide quotes.

// migrations-v1:begin
enum ContactsV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Contact.self]
    enum Contact: Model {
        static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            Column("birthday", .text)  // "YYYY-MM-DD"
            Column("groupID", .text)
        }
    }
}
// migrations-v1:end

// migrations-v1-1:begin
enum ContactsV1_1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [Group.self, Contact.self]
    enum Group: Model {  // a new table
        static let tableDefinition = TableDefinition("groups", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }
    enum Contact: Model {
        static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            Column("birthday", .text)
            Column("groupID", .text)
            Column("email", .text)  // a new nullable column
            Column("favorite", .integer).notNull().defaults(0)  // NOT NULL needs a DEFAULT
            Index("contacts_email", on: "email")  // a new index
        }
    }
}
// migrations-v1-1:end

// migrations-v2:begin
enum ContactsV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [ContactsV1_1.Group.self, Contact.self]
    enum Contact: Model {
        static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            /// Deprecated since 2.0.0: read and write `birthdayAt`.
            Column("birthday", .text)
            Column("groupID", .text).references("groups", "id", onDelete: .setNull)  // a key on an old column
            Column("email", .text)
            Column("favorite", .integer).notNull().defaults(0)
            Column("birthdayAt", .real)  // the new type, in a new column
            Index("contacts_email", on: "email")
        }
    }
}
// migrations-v2:end

// migrations-plan:begin
enum ContactsPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ContactsV1.self, ContactsV1_1.self, ContactsV2.self]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: ContactsV1.self, toVersion: ContactsV1_1.self),
        .custom(
            fromVersion: ContactsV1_1.self, toVersion: ContactsV2.self,
            willMigrate: { context in
                // A contact whose group is gone would break the new key: it keeps no group instead.
                if try context.tableExists("contacts") {
                    try context.execute(
                        """
                        UPDATE contacts SET groupID = NULL
                        WHERE groupID IS NOT NULL AND groupID NOT IN (SELECT id FROM groups)
                        """)
                }
                try context.rebuildTable(ContactsV2.Contact.self)  // does nothing if already rebuilt
            },
            didMigrate: { context in
                try context.updateInBatches(
                    "contacts", set: "birthdayAt = CAST(unixepoch(birthday) AS REAL)",
                    where: "birthdayAt IS NULL AND birthday IS NOT NULL")
            }),
    ]
}
// migrations-plan:end

// migrations-verify:begin
@Test func contactsPlanKeepsEveryRowOnEveryPath() throws {
    let report = try MigrationPlanVerifier(plan: ContactsPlan.self).verify()
    #expect(report.problems.isEmpty, "\(report)")
}
// migrations-verify:end

// What the guide's table of broken rules is checked against: one plan per broken rule.

/// 1.0.0 as if edited after it shipped: a column slipped in.
private enum ContactsV1Edited: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Contact.self]
    enum Contact: Model {
        static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            Column("birthday", .text)
            Column("groupID", .text)
            Column("nickname", .text)
        }
    }
}

private enum EditedShippedPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ContactsV1Edited.self]
    static let stages: [MigrationStage] = []
}

/// The shipped 1.1.0 and its stage removed, 1.2.0 in their place.
private enum ContactsV1_2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.2.0"
    static let models: [any Model.Type] = ContactsV1_1.models
}

private enum RemovedStagePlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ContactsV1.self, ContactsV1_2.self]
    static let stages: [MigrationStage] = [.lightweight(fromVersion: ContactsV1.self, toVersion: ContactsV1_2.self)]
}

/// A lightweight 1.1.0 whose `contacts` is `Contact`, which differs from 1.0.0 in one non-additive way.
private enum LightweightTarget<Contact: Model>: VersionedSchema {
    static var versionIdentifier: Schema.Version { "1.1.0" }
    static var models: [any Model.Type] { [Contact.self] }
}

private enum LightweightPlan<Contact: Model>: MigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ContactsV1.self, LightweightTarget<Contact>.self] }
    static var stages: [MigrationStage] {
        [.lightweight(fromVersion: ContactsV1.self, toVersion: LightweightTarget<Contact>.self)]
    }
}

private func lightweightPlan<Contact: Model>(_ contact: Contact.Type) -> any MigrationPlan.Type {
    LightweightPlan<Contact>.self
}

private enum DroppedColumn: Model {
    static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
        Column("id", .text).primaryKey()
        Column("name", .text).notNull()
        Column("groupID", .text)
    }
}

private enum ChangedType: Model {
    static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
        Column("id", .text).primaryKey()
        Column("name", .text).notNull()
        Column("birthday", .real)
        Column("groupID", .text)
    }
}

private enum NotNullWithoutDefault: Model {
    static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
        Column("id", .text).primaryKey()
        Column("name", .text).notNull()
        Column("birthday", .text)
        Column("groupID", .text)
        Column("email", .text).notNull()
    }
}

private enum KeyOnExistingColumn: Model {
    static let tableDefinition = TableDefinition("contacts", options: [.strict]) {
        Column("id", .text).primaryKey()
        Column("name", .text).notNull()
        Column("birthday", .text)
        Column("groupID", .text).references("contacts", "id")
    }
}

/// SQL a custom stage runs, and the lint rule it breaks.
private protocol StageScript {
    static var sql: String { get }
    static var rule: String { get }
    static var acknowledged: Set<String> { get }
}

extension StageScript {
    static var acknowledged: Set<String> { [] }
}

private enum DropsAColumn: StageScript {
    static let sql = "ALTER TABLE contacts DROP COLUMN birthday"
    static let rule = "drop-column"
}

private enum ClearsTheTable: StageScript {
    static let sql = "DELETE FROM contacts"
    static let rule = "unbounded-write-on-synced-table"
}

private enum ClearsTheTableKnowingly: StageScript {
    static let sql = "DELETE FROM contacts"
    static let rule = "unbounded-write-on-synced-table"
    static var acknowledged: Set<String> { [rule] }
}

private enum TurnsKeysOn: StageScript {
    static let sql = "PRAGMA foreign_keys = ON"
    static let rule = "foreign-keys-pragma-in-transaction"
}

private enum AltersAColumn: StageScript {
    static let sql = "ALTER TABLE contacts ALTER COLUMN name TEXT"
    static let rule = "column-type-change-in-place"
}

private enum RenamesTheOldTableFirst: StageScript {
    static let sql = "ALTER TABLE contacts RENAME TO old_contacts; CREATE TABLE contacts (id TEXT PRIMARY KEY)"
    static let rule = "rename-old-table-first"
}

private enum DropsATableWithRows: StageScript {
    static let sql = "DROP TABLE contacts"
    static let rule = "drop-table-with-rows"
}

private enum AddsAnUndeclaredIndex: StageScript {
    static let sql = "CREATE INDEX IF NOT EXISTS contacts_name ON contacts(name)"
    static let rule = ""
}

/// 1.0.1, the same tables as 1.0.0, reached by a custom stage running `Script.sql`.
private enum CustomTarget: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.1"
    static let models: [any Model.Type] = [ContactsV1.Contact.self]
}

private enum CustomStagePlan<Script: StageScript>: MigrationPlan {
    static var schemas: [any VersionedSchema.Type] { [ContactsV1.self, CustomTarget.self] }
    static var stages: [MigrationStage] {
        let sql = Script.sql
        return [
            .custom(
                fromVersion: ContactsV1.self, toVersion: CustomTarget.self, acknowledgingLintRules: Script.acknowledged,
                didMigrate: { context in try context.executeScript(sql) })
        ]
    }
}

private func customStagePlan<Script: StageScript>(_ script: Script.Type) -> any MigrationPlan.Type {
    CustomStagePlan<Script>.self
}

@Suite struct GuideWritingMigrationsTests {
    let directory: TemporaryDirectory
    let guide: String

    init() throws {
        directory = try TemporaryDirectory()
        guide = try DocumentedCode.text("docs/writing-migrations.md")
    }

    @Test func theGuideShowsTheCompiledCodeVerbatim() throws {
        let problems = try DocumentedCode.differences(
            markdown: "docs/writing-migrations.md",
            sources: ["Tests/OfflineStoreTests/Tools/GuideWritingMigrationsTests.swift"])
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func thePlanInstallsFreshAndUpgradesFromOneZeroWithData() throws {
        let fresh = try Database(path: directory.path("fresh.sqlite"))
        try Migrator(plan: ContactsPlan.self).migrate(fresh)
        #expect(try Migrator(plan: ContactsPlan.self).currentVersion(fresh) == "2.0.0")

        let db = try Database(path: directory.path("upgraded.sqlite"))
        try Migrator(plan: ContactsPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.execute(
            "INSERT INTO contacts (id, name, birthday, groupID) VALUES ('a', 'Ada', '1815-12-10', 'gone'), ('b', 'Bob', NULL, NULL)"
        )
        try Migrator(plan: ContactsPlan.self).migrate(db)
        let rows = try db.fetchAll(
            String.self,
            "SELECT id || ':' || ifnull(groupID, '-') || ':' || ifnull(CAST(birthdayAt AS INTEGER), '-') || ':' || favorite FROM contacts ORDER BY id"
        )
        #expect(rows == ["a:-:-4861728000:0", "b:-:-:0"])
        #expect(try db.foreignKeys(on: "contacts").map(\.destinationTable) == ["groups"])
    }

    @Test func ostoreLintPrintsWhatTheGuideShows() throws {
        let sql = try #require(
            DocumentedCode.codeBlocks(ofMarkdown: "docs/writing-migrations.md", language: "sql").first)
        let command = try #require(
            DocumentedCode.codeBlocks(ofMarkdown: "docs/writing-migrations.md", language: "sh").first)
        let shown = try DocumentedCode.codeBlocks(ofMarkdown: "docs/writing-migrations.md", language: "text")
        try sql.write(toFile: directory.path("stage.sql"), atomically: true, encoding: .utf8)
        let tools = try builtProduct("ostore").deletingLastPathComponent().path
        let result = try run(
            "/bin/bash", ["-c", "cd \"$0\" && PATH=\"$1:$PATH\" && " + command, directory.url.path, tools])
        #expect(result.status == 1)
        let output = String(decoding: result.output + result.error, as: UTF8.self)
        #expect(shown.last == output)
    }

    /// Each error kind the guide names, with words of the message or fix it quotes.
    private func expectQuoted(_ error: MigrationError?, _ kind: MigrationError.Kind, _ phrase: String) {
        #expect(error?.kind == kind)
        #expect(error.map { "\($0)" }?.contains(phrase) == true, "\(String(describing: error))")
        #expect(guide.contains("`\(kind.rawValue)`"), "the guide does not name \(kind.rawValue)")
        #expect(guide.contains(phrase), "the guide does not quote: \(phrase)")
    }

    private func migrationError(_ body: () throws -> Void) -> MigrationError? {
        do {
            try body()
            return nil
        } catch {
            return error as? MigrationError
        }
    }

    @Test func shippedVersionsAndStagesAreImmutable() throws {
        let db = try Database(path: directory.path("shipped.sqlite"))
        try Migrator(plan: ContactsPlan.self, releasedUpTo: "1.1.0").migrate(db)
        expectQuoted(
            migrationError { try Migrator(plan: EditedShippedPlan.self).migrate(db) }, .checksumMismatch,
            "the shipped stage changed since it ran on this database")
        expectQuoted(
            migrationError { try Migrator(plan: RemovedStagePlan.self).migrate(db) }, .stageRemovedOrReordered,
            "shipped stages are append-only")
        expectQuoted(
            migrationError { try Migrator(plan: ContactsPlan.self, releasedUpTo: "1.0.0").migrate(db) },
            .databaseNewerThanPlan, "which this release does not know")
        #expect(try Migrator(plan: ContactsPlan.self).currentVersion(db) == "1.1.0")
    }

    @Test func lightweightStagesOnlyAdd() {
        let cases: [(any Model.Type, String)] = [
            (DroppedColumn.self, "OfflineStore never drops a column"),
            (ChangedType.self, "never change a column's type in place"),
            (NotNullWithoutDefault.self, "a NOT NULL column needs a non-NULL DEFAULT"),
            (KeyOnExistingColumn.self, "a foreign key on an existing column needs SQLite's table rebuild"),
        ]
        for (model, phrase) in cases {
            expectQuoted(
                migrationError { _ = try Migrator(plan: lightweightPlan(model)) }, .nonAdditiveChange, phrase)
        }
    }

    @Test func stageSQLIsLintedAndANeverRuleFailsTheStageUnlessAcknowledged() throws {
        let db = try Database(path: directory.path("lint.sqlite"))
        try Migrator(plan: ContactsPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.execute("INSERT INTO contacts (id, name) VALUES ('a', 'Ada')")
        let broken: [any StageScript.Type] = [
            DropsAColumn.self, ClearsTheTable.self, TurnsKeysOn.self, AltersAColumn.self,
            RenamesTheOldTableFirst.self, DropsATableWithRows.self,
        ]
        for script in broken {
            let error = migrationError { try Migrator(plan: customStagePlan(script)).migrate(db) }
            expectQuoted(error, .lintViolation, "migration error in stage 1.0.0 → 1.0.1 (custom): ")
            #expect(error?.message.hasPrefix(script.rule + ": ") == true, "\(String(describing: error))")
            #expect(guide.contains("`\(script.rule)`"), "the guide does not name \(script.rule)")
        }
        let clearing = migrationError { try Migrator(plan: customStagePlan(ClearsTheTable.self)).migrate(db) }
        expectQuoted(clearing, .lintViolation, "If the stage really must, acknowledge the rule")
        let shown = try DocumentedCode.codeBlocks(ofMarkdown: "docs/writing-migrations.md", language: "text").first
        #expect(shown == clearing.map { "\($0)\n" })
        #expect(try db.count("contacts") == 1)
        #expect(try Migrator(plan: ContactsPlan.self).currentVersion(db) == "1.0.0")
        try Migrator(plan: customStagePlan(ClearsTheTableKnowingly.self)).migrate(db)
        #expect(try db.count("contacts") == 0)
    }

    @Test func aStageEndsAtItsDeclaredSchemaWithForeignKeysIntact() throws {
        let db = try Database(path: directory.path("end.sqlite"))
        try Migrator(plan: ContactsPlan.self, releasedUpTo: "1.0.0").migrate(db)
        expectQuoted(
            migrationError { try Migrator(plan: customStagePlan(AddsAnUndeclaredIndex.self)).migrate(db) },
            .schemaMismatchAfterStage, "everything the stage creates, and create nothing else")
        // A stage that leaves an orphan: the rebuild's key check stops it.
        try Migrator(plan: ContactsPlan.self, releasedUpTo: "1.1.0").migrate(db)
        try db.execute("INSERT INTO contacts (id, name, groupID) VALUES ('a', 'Ada', 'gone')")
        expectQuoted(
            migrationError { try Migrator(plan: OrphanKeepingPlan.self).migrate(db) }, .foreignKeyViolation,
            "violate foreign keys")
        expectQuoted(
            migrationError { try db.transaction { db in try Migrator(plan: ContactsPlan.self).migrate(db) } }, .misuse,
            "call migrate before beginning a transaction")
        #expect(try Migrator(plan: ContactsPlan.self).currentVersion(db) == "1.1.0")
    }
}

/// ContactsPlan's 2.0.0 stage without the step that clears dangling group ids.
private enum OrphanKeepingPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ContactsV1.self, ContactsV1_1.self, ContactsV2.self]
    static let stages: [MigrationStage] = [
        ContactsPlan.stages[0],
        .custom(
            fromVersion: ContactsV1_1.self, toVersion: ContactsV2.self,
            willMigrate: { context in try context.rebuildTable(ContactsV2.Contact.self) }),
    ]
}
