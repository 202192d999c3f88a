import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.2 gives each dataset a `foldedSerial`: the log is stored and acknowledged first, and
/// ``StateFolder`` merges it into `server_rows`/`server_cells` afterwards, so the state is the
/// log's entries up to `foldedSerial` merged, no more and no less. The stage's step sets it to
/// `lastSerial`, since every earlier release merged each change in the push's own transaction.
enum ServerSchemaV1_2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.2.0"
    static let models: [any Model.Type] = [
        Dataset.self, ServerSchemaV1.DatasetSchema.self, ServerSchemaV1.Token.self, ServerSchemaV1.Site.self,
        ServerSchemaV1.LogEntry.self, ServerSchemaV1.RowState.self, ServerSchemaV1.CellState.self,
    ]

    enum Dataset: Model {
        static let tableDefinition = TableDefinition("server_datasets", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("name", .text).notNull().unique()
            Column("createdAt", .real).notNull()
            Column("schemaVersion", .text)
            Column("lastSerial", .integer).notNull().defaults(0)
            Column("incarnation", .text)
            Column("foldedSerial", .integer).notNull().defaults(0)
        }
    }

    /// Runs once, in the stage's transaction: a dataset written by an earlier release is wholly
    /// folded.
    static let markEverythingFolded: MigrationStage.Body = { context in
        try context.execute("UPDATE server_datasets SET foldedSerial = lastSerial")
    }
}
