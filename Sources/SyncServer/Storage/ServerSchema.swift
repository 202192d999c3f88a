import OfflineStoreMigrations
import OfflineStoreSQLite

/// The embedded server's own tables, versioned and migrated by OfflineStore's ``Migrator`` like
/// any app's schema (so a later release evolves them with a checksummed stage).
enum ServerMigrationPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [
        ServerSchemaV1.self, ServerSchemaV1_1.self, ServerSchemaV1_2.self, ServerSchemaV1_3.self, ServerSchemaV1_4.self,
        ServerSchemaV1_5.self, ServerSchemaV1_6.self, ServerSchemaV1_7.self, ServerSchemaV1_8.self,
        ServerSchemaV1_9.self,
    ]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: ServerSchemaV1.self, toVersion: ServerSchemaV1_1.self),
        .custom(
            fromVersion: ServerSchemaV1_1.self, toVersion: ServerSchemaV1_2.self,
            didMigrate: ServerSchemaV1_2.markEverythingFolded),
        .custom(
            fromVersion: ServerSchemaV1_2.self, toVersion: ServerSchemaV1_3.self, didMigrate: ServerSchemaV1_3.packCells
        ),
        .lightweight(fromVersion: ServerSchemaV1_3.self, toVersion: ServerSchemaV1_4.self),
        .lightweight(fromVersion: ServerSchemaV1_4.self, toVersion: ServerSchemaV1_5.self),
        .lightweight(fromVersion: ServerSchemaV1_5.self, toVersion: ServerSchemaV1_6.self),
        .lightweight(fromVersion: ServerSchemaV1_6.self, toVersion: ServerSchemaV1_7.self),
        .lightweight(fromVersion: ServerSchemaV1_7.self, toVersion: ServerSchemaV1_8.self),
        .lightweight(fromVersion: ServerSchemaV1_8.self, toVersion: ServerSchemaV1_9.self),
    ]
}

enum ServerSchemaV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [
        Dataset.self, DatasetSchema.self, Token.self, Site.self, LogEntry.self, RowState.self, CellState.self,
    ]

    /// `lastSerial` numbers the dataset's log: each stored change takes the next one inside the
    /// write transaction, and SQLite has one writer, so serials become visible in order.
    enum Dataset: Model {
        static let tableDefinition = TableDefinition("server_datasets", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("name", .text).notNull().unique()
            Column("createdAt", .real).notNull()
            Column("schemaVersion", .text)
            Column("lastSerial", .integer).notNull().defaults(0)
        }
    }

    /// The fingerprint each schema version was first announced with (from 1.7: by a hello without a
    /// definition; ``ServerSchemaV1_7`` keeps the definitions).
    enum DatasetSchema: Model {
        static let tableDefinition = TableDefinition(
            "server_schemas", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull().references("server_datasets", "id")
            Column("version", .text).notNull()
            Column("fingerprint", .text).notNull()
            PrimaryKey("datasetID", "version")
        }
    }

    /// Only the SHA-256 digest of each token is kept.
    enum Token: Model {
        static let tableDefinition = TableDefinition("server_tokens", sync: .localOnly, options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("datasetID", .integer).notNull().references("server_datasets", "id")
            Column("digest", .blob).notNull().unique()
            Column("readOnly", .integer).notNull()
            Column("createdAt", .real).notNull()
            Column("revokedAt", .real)
        }
    }

    /// Per site, the highest `seq` stored: what makes pushes idempotent.
    enum Site: Model {
        static let tableDefinition = TableDefinition(
            "server_sites", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("site", .blob).notNull()
            Column("highSeq", .integer).notNull()
            PrimaryKey("datasetID", "site")
        }
    }

    /// The append-only log: every stored change as the canonical JSON pulls send verbatim.
    enum LogEntry: Model {
        static let tableDefinition = TableDefinition(
            "server_log", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("serial", .integer).notNull()
            Column("site", .blob).notNull()
            Column("body", .text).notNull()
            PrimaryKey("datasetID", "serial")
        }
    }

    /// The merged state of each row: its newest creation and deletion versions. `key` is the
    /// canonical JSON of the row's key.
    enum RowState: Model {
        static let tableDefinition = TableDefinition(
            "server_rows", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("tableName", .text).notNull()
            Column("key", .text).notNull()
            Column("createdClock", .integer)
            Column("createdSite", .blob)
            Column("deletedClock", .integer)
            Column("deletedSite", .blob)
            PrimaryKey("datasetID", "tableName", "key")
        }
    }

    /// The merged value of each column of each live row, with the version that wrote it.
    enum CellState: Model {
        static let tableDefinition = TableDefinition(
            "server_cells", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("tableName", .text).notNull()
            Column("key", .text).notNull()
            Column("columnName", .text).notNull()
            Column("value", .any)
            Column("clock", .integer).notNull()
            Column("site", .blob).notNull()
            PrimaryKey("datasetID", "tableName", "key", "columnName")
        }
    }
}
