import Foundation
import OfflineStore
import OfflineStoreTesting
import Testing

// docs/getting-started.md: its Swift blocks are the regions below, verbatim; the tests run them
// and the guide's ostore commands on the store they make.

// start-schema:begin
enum TodoSchemaV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [Todos.self, Preferences.self]

    enum Todos: Model {
        static let tableDefinition = TableDefinition("todos", options: [.strict]) {
            Column("id", .text).primaryKey()  // a UUID, so two devices never pick the same key
            Column("title", .text).notNull()
            Column("done", .integer).notNull().defaults(0)
            Column("dueAt", .real)  // seconds since 1970
            Index("todos_done", on: "done")
        }
    }

    enum Preferences: Model {  // this device's own state: never synced
        static let tableDefinition = TableDefinition("preferences", sync: .localOnly, options: [.strict]) {
            Column("name", .text).primaryKey()
            Column("value", .text)
        }
    }
}

enum TodoPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [TodoSchemaV1.self]
    static let stages: [MigrationStage] = []
    static let records: [any ModelRecord.Type] = [Todo.self]  // checked against the latest schema
}
// start-schema:end

// start-record:begin
struct Todo: Codable, Equatable, FetchableRecord, PersistableRecord, ModelRecord {
    typealias Model = TodoSchemaV1.Todos  // its table, declared once
    var id = UUID().uuidString
    var title: String
    var done = false
    var dueAt: Date?
}
// start-record:end

// start-open:begin
/// Opens the store: creates or migrates the file, and records every write to synced tables.
func openTodoStore(at path: String) throws -> (db: Database, log: ChangeLog) {
    let db = try Database(path: path)
    let log = try ChangeLog.open(db, migrator: try Migrator(plan: TodoPlan.self))
    return (db, log)
}
// start-open:end

// start-write:begin
func addTodo(_ title: String, due: Date? = nil, db: Database) throws -> Todo {
    let todo = Todo(title: title, dueAt: due)
    try todo.insert(db)
    return todo
}

func complete(_ id: String, db: Database) throws {
    guard var todo = try Todo.fetchOne(db, key: id) else { return }
    let before = todo
    todo.done = true
    try todo.updateChanges(db, from: before)  // UPDATE todos SET done = ? WHERE id = ?
}

func openTodos(matching text: String, db: Database) throws -> [Todo] {
    try Todo.fetchAll(
        db, "SELECT * FROM todos WHERE done = \(false) AND title LIKE \("%" + text + "%") ORDER BY title")
}

func moveAllDueDates(by seconds: Double, db: Database) throws {
    try db.transaction { db in  // all or nothing; a throw rolls back
        try db.execute("UPDATE todos SET dueAt = dueAt + \(seconds) WHERE dueAt IS NOT NULL")
    }
}
// start-write:end

// start-observe:begin
/// The open todos now, then again after each commit that changes them, in this process or another.
func watchOpenTodos(in pool: DatabasePool) -> AsyncThrowingStream<[Todo], any Error> {
    ValueObservation { db in try openTodos(matching: "", db: db) }.values(in: pool)
}
// start-observe:end

// start-verify:begin
@Test func todoPlanIsSafe() throws {
    let report = try MigrationPlanVerifier(plan: TodoPlan.self).verify()
    #expect(report.problems.isEmpty, "\(report)")
}
// start-verify:end

@Suite struct GuideGettingStartedTests {
    let guide = "docs/getting-started.md"

    @Test func theGuideShowsTheCompiledCodeVerbatim() throws {
        let problems = try DocumentedCode.differences(
            markdown: guide, sources: ["Tests/OfflineStoreTests/Tools/GuideGettingStartedTests.swift"])
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func theStoreRecordsWhatTheAppWritesAndOstoreShowsIt() throws {
        let directory = try TemporaryDirectory()
        let (db, log) = try openTodoStore(at: directory.path("todos.sqlite"))
        let milk = try addTodo("Buy milk", due: Date(timeIntervalSince1970: 1_000), db: db)
        _ = try addTodo("Call Bob's mum; DROP TABLE todos", db: db)
        _ = try addTodo("Buy stamps", db: db)
        try complete(milk.id, db: db)
        try moveAllDueDates(by: 60, db: db)
        try db.execute("INSERT INTO preferences (name, value) VALUES ('theme', 'dark')")
        #expect(try openTodos(matching: "Buy", db: db).map(\.title) == ["Buy stamps"])
        #expect(try openTodos(matching: "'", db: db).map(\.title) == ["Call Bob's mum; DROP TABLE todos"])
        #expect(
            try Todo.fetchAll(db, "SELECT * FROM todos WHERE id = \(milk.id)").first?.dueAt?.timeIntervalSince1970
                == 1_060)
        // Three inserts and two changed columns of one row; the preference is not recorded.
        #expect(try log.pendingCount(db) == 5)

        let tools = try builtProduct("ostore").deletingLastPathComponent().path
        let command = try #require(DocumentedCode.codeBlocks(ofMarkdown: guide, language: "sh").first)
        let result = try run(
            "/bin/bash", ["-c", "set -e; cd \"$0\"; PATH=\"$1:$PATH\"; " + command, directory.url.path, tools])
        #expect(result.status == 0, "\(String(decoding: result.error, as: UTF8.self))")
        let output = String(decoding: result.output, as: UTF8.self)
        #expect(output.contains("schema version:   1.0.0\n"))
        #expect(output.contains("pending changes:  5\n"))
        #expect(output.split(separator: "\n").filter { $0.contains(" todos ") }.count == 5)
        #expect(!output.contains("preferences"))
    }

    @Test func theOpenTodosAreToldAgainAfterEachChange() async throws {
        let directory = try TemporaryDirectory()
        let pool = try DatabasePool(path: directory.path("todos.sqlite"))
        let migrator = try Migrator(plan: TodoPlan.self)
        try await pool.writeWithoutTransaction { db in _ = try ChangeLog.open(db, migrator: migrator) }
        var told: [[String]] = []
        for try await todos in watchOpenTodos(in: pool) {
            told.append(todos.map(\.title))
            switch told.count {
            case 1: _ = try await pool.write { db in try addTodo("Buy milk", db: db) }
            case 2:
                let milk = try #require(todos.first)
                try await pool.write { db in try complete(milk.id, db: db) }
            default: break
            }
            if told.count == 3 { break }
        }
        #expect(told == [[], ["Buy milk"], []])
    }
}
