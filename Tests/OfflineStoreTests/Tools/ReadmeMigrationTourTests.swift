import Foundation
import OfflineStore
import Testing

// The README's migration tour, verbatim between the markers (ReadmeTourTests checks that the README
// shows it), so the example cannot rot.

// migration-tour:begin
enum TasksV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Task.self]
    enum Task: Model {
        static let tableDefinition = TableDefinition("tasks", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
        }
    }
}

enum TasksV1_1: VersionedSchema {  // a full snapshot, not a diff
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [Task.self]
    enum Task: Model {
        static let tableDefinition = TableDefinition("tasks", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("notes", .text).notNull().defaults("")  // NOT NULL needs a DEFAULT to be added
            Column("titleKey", .text)  // filled by the stage below
            Index("tasks_titleKey", on: "titleKey")
        }
    }
}

enum TasksPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [TasksV1.self, TasksV1_1.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: TasksV1.self, toVersion: TasksV1_1.self,
            didMigrate: { context in
                // Linted before it runs; on a fresh or purged database there is simply nothing to fill.
                try context.execute("UPDATE tasks SET titleKey = lower(title) WHERE titleKey IS NULL")
            })
    ]
}

func migrationTour(path: String) throws -> (version: Schema.Version?, keys: [String]) {
    let db = try Database(path: path)
    try Migrator(plan: TasksPlan.self, releasedUpTo: "1.0.0").migrate(db)  // what release 1.0 did
    try db.execute("INSERT INTO tasks (id, title) VALUES (\(UUID().uuidString), \("Buy Milk"))")

    let migrator = try Migrator(plan: TasksPlan.self)  // validates the plan, touches no database
    try migrator.migrate(db)  // each pending stage in its own transaction, recorded with a checksum
    return (try migrator.currentVersion(db), try db.fetchAll(String.self, "SELECT titleKey FROM tasks"))
}
// migration-tour:end

@Suite struct ReadmeMigrationTourTests {
    @Test func migrationTourRunsAsTheReadmeSays() throws {
        let directory = try TemporaryDirectory()
        let result = try migrationTour(path: directory.path("tasks.sqlite"))
        #expect(result.version == "1.1.0")
        #expect(result.keys == ["buy milk"])
    }
}
