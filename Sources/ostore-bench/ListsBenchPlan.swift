import OfflineStore

/// The first-sync workload's schema with a foreign key (`--first-sync-schema lists`): the change-log
/// bench's `todos`, each in one of 1,000 `lists`, as the Reminders sample's reminders are in lists
/// (`listID REFERENCES lists(id) ON DELETE CASCADE`, indexed). `listID` is nullable so the C
/// reference can insert the same todos without it.
enum ListsBenchPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ListsSchema.self]
    static let stages: [MigrationStage] = []

    /// How many lists the todos are spread over.
    static let listCount = 1_000

    enum ListsSchema: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [TodoList.self, Todo.self]
    }

    enum TodoList: Model {
        static let tableDefinition = TableDefinition("lists", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }

    /// The change-log bench's todo, with its list.
    enum Todo: Model {
        static let tableDefinition = {
            var todos = ChangeLogBenchPlan.Todo.tableDefinition
            todos.columns.append(Column("listID", .text).references("lists", "id", onDelete: .cascade))
            todos.indexes.append(Index("todos_listID", on: "listID"))
            return todos
        }()
    }
}

/// Which schema the first-sync workload's dataset is made for.
enum FirstSyncSchema: String {
    /// The change-log bench's `todos` table alone (``ChangeLogBenchPlan``).
    case todos
    /// `todos` in 1,000 `lists`, with a foreign key (``ListsBenchPlan``).
    case lists

    /// The plan's name as the `sync-client` child takes it.
    var planName: String { rawValue }

    static func migrator(named name: String) throws -> Migrator {
        switch FirstSyncSchema(rawValue: name) {
        case .todos: return try Migrator(plan: ChangeLogBenchPlan.self)
        case .lists: return try Migrator(plan: ListsBenchPlan.self)
        case nil: throw BenchmarkFailure(description: "no bench schema named \(name) (todos or lists)")
        }
    }
}
