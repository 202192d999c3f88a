import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.4 keeps with each log entry the fingerprint of the log up to it (``LogChain``), and
/// with each dataset the one of its newest entry, which pull cursors carry, so a cursor read from a
/// log that was since replaced by a copy put back by hand is refused even once the new log has grown
/// past it. Entries stored before 1.4 have none (NULL); the first entry after them starts a new
/// chain, and cursors issued before 1.4 carry no fingerprint, so they stay valid across the upgrade.
///
/// The merged state has since moved to a file of its own (``ServerStateFile``): `server_rows` stays
/// empty and `server_datasets.foldedSerial` 0 once the first start of that release has moved them.
enum ServerSchemaV1_4: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.4.0"
    static let models: [any Model.Type] = [
        Dataset.self, ServerSchemaV1.DatasetSchema.self, ServerSchemaV1.Token.self, ServerSchemaV1.Site.self,
        LogEntry.self, ServerSchemaV1_3.RowState.self, ServerSchemaV1.CellState.self,
    ]

    /// `lastChain`: the fingerprint of the log up to `lastSerial`, which a push chains its first
    /// entry to and a pull at the log's end reads with `lastSerial` (NULL before the first entry
    /// stored with one).
    enum Dataset: Model {
        static let tableDefinition = TableDefinition("server_datasets", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("name", .text).notNull().unique()
            Column("createdAt", .real).notNull()
            Column("schemaVersion", .text)
            Column("lastSerial", .integer).notNull().defaults(0)
            Column("incarnation", .text)
            Column("foldedSerial", .integer).notNull().defaults(0)
            Column("lastChain", .integer)
        }
    }

    /// The append-only log: every stored change as the canonical JSON pulls send verbatim, and the
    /// fingerprint of the log up to it.
    enum LogEntry: Model {
        static let tableDefinition = TableDefinition(
            "server_log", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("serial", .integer).notNull()
            Column("site", .blob).notNull()
            Column("body", .text).notNull()
            Column("chain", .integer)
            PrimaryKey("datasetID", "serial")
        }
    }
}
