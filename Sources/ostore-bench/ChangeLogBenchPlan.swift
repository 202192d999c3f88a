import OfflineStore

/// One synced table of the shape the change-log workloads write: a UUID text key and three
/// values, so an update of one column is logged as one entry and an insert as one.
enum ChangeLogBenchPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [TodoSchema.self]
    static let stages: [MigrationStage] = []

    enum TodoSchema: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [Todo.self]
    }

    enum Todo: Model {
        static let tableDefinition = TableDefinition("todos", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("done", .integer).notNull().defaults(0)
            Column("updatedAt", .real).notNull()
        }
    }
}
