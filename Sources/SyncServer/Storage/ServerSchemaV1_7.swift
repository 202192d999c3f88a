import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.7 keeps the definition of each schema version a hello announced with one
/// (Protocol/README.md, section 5.1), with its fingerprint, beside the fingerprints of hellos
/// without one, which stay in `server_schemas` (``RecordedSchema``): pushes under a version with a
/// definition are checked against it, change by change (``SchemaRules``). `definition` is the
/// definition's canonical JSON. Versions announced before 1.7 have none until a hello with one.
enum ServerSchemaV1_7: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.7.0"
    static let models: [any Model.Type] = [
        ServerSchemaV1_6.Dataset.self, ServerSchemaV1.DatasetSchema.self, ServerSchemaV1.Token.self,
        ServerSchemaV1_6.Site.self, ServerSchemaV1_4.LogEntry.self, ServerSchemaV1_3.RowState.self,
        ServerSchemaV1.CellState.self, ServerSchemaV1_5.StoredCursorKey.self, DatasetSchemaDefinition.self,
    ]

    enum DatasetSchemaDefinition: Model {
        static let tableDefinition = TableDefinition(
            "server_schema_definitions", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull().references("server_datasets", "id")
            Column("version", .text).notNull()
            Column("fingerprint", .text).notNull()
            Column("definition", .text).notNull()
            PrimaryKey("datasetID", "version")
        }
    }
}
