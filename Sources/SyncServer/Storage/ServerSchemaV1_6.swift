import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.6 binds each site to a token and lets the operator bound a dataset's schema moves.
/// `server_sites.tokenID` is the token the site belongs to (``SiteBinding``): sites stored before
/// 1.6 have none (NULL) and are bound by their first hello or push after the upgrade, as a site
/// used only through the operator's own calls stays unbound. `server_datasets.allowedMajor` is the
/// highest major the dataset may move to (`ostore-server dataset allow-major`); NULL, as for every
/// dataset made before 1.6, lets a dataset no client has joined take its first hello's major and
/// keeps every other at its current one.
enum ServerSchemaV1_6: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.6.0"
    static let models: [any Model.Type] = [
        Dataset.self, ServerSchemaV1.DatasetSchema.self, ServerSchemaV1.Token.self, Site.self,
        ServerSchemaV1_4.LogEntry.self, ServerSchemaV1_3.RowState.self, ServerSchemaV1.CellState.self,
        ServerSchemaV1_5.StoredCursorKey.self,
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
            Column("lastChain", .integer)
            Column("allowedMajor", .integer)
        }
    }

    /// Per site, the highest `seq` stored (what makes pushes idempotent) and the token it belongs
    /// to. No foreign key: a push reads the token through a join on `server_tokens`' primary key.
    enum Site: Model {
        static let tableDefinition = TableDefinition(
            "server_sites", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("site", .blob).notNull()
            Column("highSeq", .integer).notNull()
            Column("tokenID", .text)
            PrimaryKey("datasetID", "site")
        }
    }
}
