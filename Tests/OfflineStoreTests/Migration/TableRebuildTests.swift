import Foundation
import OfflineStore
import Testing

/// Version 1: projects and tasks, `tasks.projectID` without a declared key.
enum ProjectsV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Project.self, Task.self]
    enum Project: Model {
        static let tableDefinition = TableDefinition("projects", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }
    enum Task: Model {
        static let tableDefinition = TableDefinition("tasks", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("projectID", .text).notNull()
            Column("title", .text).notNull()
            Index("tasks_title", on: "title")
        }
    }
}

/// Version 2: the key declared (a rebuild), and the project name copied in through a lookup.
enum ProjectsV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [ProjectsV1.Project.self, Task.self]
    enum Task: Model {
        static let tableDefinition = TableDefinition("tasks", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("projectID", .text).notNull().references("projects", "id", onDelete: .cascade)
            Column("title", .text).notNull()
            Column("projectName", .text)
            Index("tasks_title", on: "title")
        }
    }
}

/// How the test plans rebuild `tasks`; set before each migration.
let rebuildJoin = Locked<String?>(nil)

enum ProjectsPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ProjectsV1.self, ProjectsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: ProjectsV1.self, toVersion: ProjectsV2.self,
            willMigrate: { context in
                let join = rebuildJoin.value
                try context.rebuildTable(
                    ProjectsV2.Task.self, values: join == nil ? [:] : ["projectName": "\"p\".name"], join: join)
            })
    ]
}

@Suite("Table rebuild: dependents, lookups and duplicates", .serialized)
struct TableRebuildTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    func databaseAtVersion1(_ name: String) throws -> Database {
        let db = try Database(path: directory.path(name))
        try Migrator(plan: ProjectsPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.execute("INSERT INTO projects (id, name) VALUES ('p1', 'Garden'), ('p2', 'House')")
        try db.execute(
            "INSERT INTO tasks (id, projectID, title) VALUES ('t1', 'p1', 'Dig'), ('t2', 'p2', 'Paint'), ('t3', 'p2', 'Fix')"
        )
        try db.execute("CREATE VIEW IF NOT EXISTS taskTitles AS SELECT title FROM tasks")
        try db.execute("CREATE TABLE IF NOT EXISTS audit (message TEXT)")
        try db.execute(
            "CREATE TRIGGER IF NOT EXISTS tasks_audit AFTER INSERT ON tasks BEGIN INSERT INTO audit VALUES (new.title); END"
        )
        return db
    }

    @Test func aRebuildKeepsRowsIndexesTriggersAndViewsAndAddsTheKey() throws {
        rebuildJoin.withLock { $0 = "LEFT JOIN projects AS \"p\" ON \"p\".id = \"old\".projectID" }
        let db = try databaseAtVersion1("rebuild.sqlite")
        try Migrator(plan: ProjectsPlan.self).migrate(db)
        #expect(try db.count("tasks") == 3)
        #expect(try db.scalar(String.self, "SELECT projectName FROM tasks WHERE id = 't2'") == "House")
        #expect(try db.foreignKeys(on: "tasks").map(\.destinationTable) == ["projects"])
        #expect(try db.indexes(on: "tasks").contains { $0.name == "tasks_title" })
        #expect(try db.fetchAll(String.self, "SELECT title FROM taskTitles ORDER BY title") == ["Dig", "Fix", "Paint"])
        try db.execute("INSERT INTO tasks (id, projectID, title) VALUES ('t4', 'p1', 'Plant')")
        #expect(try db.fetchAll(String.self, "SELECT message FROM audit") == ["Plant"])
        try db.execute("DELETE FROM projects WHERE id = 'p2'")
        #expect(try db.count("tasks") == 2)
        #expect(try !db.tableExists("ostore_rebuild_tasks"))
    }

    @Test func aJoinThatDuplicatesRowsAbortsWithTheOffendingRows() throws {
        // Joining on the wrong column matches several projects per task.
        rebuildJoin.withLock { $0 = "JOIN projects AS \"p\" ON \"p\".id <> \"old\".id" }
        let db = try databaseAtVersion1("duplicates.sqlite")
        var caught: MigrationError?
        do { try Migrator(plan: ProjectsPlan.self).migrate(db) } catch { caught = error }
        #expect(caught?.kind == .rowCountMismatch)
        #expect(caught?.message.contains("several rows") == true)
        #expect(caught?.details.contains { $0.hasPrefix("duplicated:") } == true)
        #expect(try Migrator(plan: ProjectsPlan.self).currentVersion(db) == "1.0.0")
        #expect(try db.count("tasks") == 3)
        #expect(try db.foreignKeys(on: "tasks").isEmpty)
    }

    @Test func aRebuildOnAFreshOrAlreadyRebuiltDatabaseDoesTheRightThing() throws {
        rebuildJoin.withLock { $0 = nil }
        let fresh = try Database(path: directory.path("fresh.sqlite"))
        try Migrator(plan: ProjectsPlan.self).migrate(fresh)
        #expect(try fresh.foreignKeys(on: "tasks").count == 1)
        // Re-running the stage (its table dropped and recreated) on a database already at 2.0.0.
        try fresh.execute("DROP TABLE tasks")
        try Migrator(plan: ProjectsPlan.self).migrate(fresh)
        #expect(try fresh.foreignKeys(on: "tasks").count == 1)
        let live = try SchemaSnapshot(liveDatabase: fresh)
        #expect(live.differences(toReach: try ProjectsV2.snapshot()).isEmpty)
    }
}
