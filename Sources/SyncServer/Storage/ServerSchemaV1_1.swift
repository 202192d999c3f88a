import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.1 gives each dataset an incarnation: a random id made with the dataset and made
/// again by `ostore-server restore`, which pull cursors carry, so a cursor issued before a backup
/// was restored is refused (`invalid_cursor`) instead of skipping the changes the restored server
/// numbers again. Datasets made before 1.1 have none (NULL) until their first restore, so the
/// cursors their devices hold stay valid across the upgrade.
enum ServerSchemaV1_1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
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
        }
    }
}
