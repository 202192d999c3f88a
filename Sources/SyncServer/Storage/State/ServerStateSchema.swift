import OfflineStoreMigrations
import OfflineStoreSQLite

/// The tables of `state.sqlite` (``ServerStateFile``), versioned and migrated by OfflineStore's
/// ``Migrator`` apart from `server.sqlite`'s: the state is derived from the log, so the file can be
/// removed and is rebuilt, but a later release still evolves it with a checksummed stage.
enum ServerStatePlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ServerStateSchemaV1.self]
    static let stages: [MigrationStage] = []
}

enum ServerStateSchemaV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [FoldedDataset.self, RowState.self]

    /// How far each dataset's log is folded into `state_rows`: through `foldedSerial`, whose log
    /// entry had fingerprint `foldedMark` (``ServerStateFile/mark(ofSerial:datasetID:_:)``: NULL at serial 0). The
    /// mark is what tells, when the server starts, that this file was folded from the log
    /// `server.sqlite` holds and not from another one (a copy of `server.sqlite` put back by hand).
    enum FoldedDataset: Model {
        static let tableDefinition = TableDefinition("state_datasets", sync: .localOnly, options: [.strict]) {
            Column("datasetID", .integer).primaryKey()
            Column("foldedSerial", .integer).notNull()
            Column("foldedMark", .integer)
        }
    }

    /// The merged state of each row, as `server_rows` kept it in `server.sqlite` before this file
    /// (``ServerSchemaV1_3/RowState``): its newest creation and deletion versions and its cells
    /// packed (``MergedRow``). `key` is the canonical JSON of the row's key.
    enum RowState: Model {
        static let tableDefinition = TableDefinition(
            "state_rows", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("tableName", .text).notNull()
            Column("key", .text).notNull()
            Column("createdClock", .integer)
            Column("createdSite", .blob)
            Column("deletedClock", .integer)
            Column("deletedSite", .blob)
            Column("cells", .blob)
            PrimaryKey("datasetID", "tableName", "key")
        }
    }
}
