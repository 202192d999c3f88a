import OfflineStoreMigrations
import OfflineStoreSQLite

/// The tables of `state.sqlite` (``ServerStateFile``), versioned and migrated by OfflineStore's
/// ``Migrator`` apart from `server.sqlite`'s: the state is derived from the log, so the file can be
/// removed and is rebuilt, but a later release still evolves it with a checksummed stage.
enum ServerStatePlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ServerStateSchemaV1.self, ServerStateSchemaV1_1.self]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: ServerStateSchemaV1.self, toVersion: ServerStateSchemaV1_1.self)
    ]
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

/// Version 1.1 adds the scope index of datasets with rules (``ScopeIndex``), kept by the fold
/// beside the rows, with its history: each link and grant holds the scope position it was made at
/// and the one it was removed at (NULL while it stands), so that what a subject could read at any
/// position a cursor names can be read back (``ScopePosition``: a log serial times 2¹⁶ for the state
/// after that serial's change, plus one for each rules change set after it).
enum ServerStateSchemaV1_1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] =
        ServerStateSchemaV1.models + [
            ScopeLink.self, ScopeGrant.self, ScopeRulesApplied.self,
        ]

    /// What puts a row in scopes (``RowLinks``): `kind` `b` for a bucket (`a` its kind, `b` its
    /// value), `p` for a parent row (`a` its table, `b` its key's canonical JSON).
    enum ScopeLink: Model {
        static let tableDefinition = TableDefinition(
            "state_scope_links", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("tableName", .text).notNull()
            Column("key", .text).notNull()
            Column("kind", .text).notNull()
            Column("a", .text).notNull()
            Column("b", .text).notNull()
            Column("addedAt", .integer).notNull()
            Column("removedAt", .integer)
            PrimaryKey("datasetID", "tableName", "key", "kind", "a", "b", "addedAt")
            Index("state_scope_links_target", on: "datasetID", "kind", "a", "b")
            Index("state_scope_links_added", on: "datasetID", "addedAt")
            Index("state_scope_links_removed", on: "datasetID", "removedAt")
        }
    }

    /// A bucket a membership row grants (``MembershipGrant``).
    enum ScopeGrant: Model {
        static let tableDefinition = TableDefinition(
            "state_scope_grants", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("tableName", .text).notNull()
            Column("key", .text).notNull()
            Column("bucketKind", .text).notNull()
            Column("member", .text).notNull()
            Column("value", .text).notNull()
            Column("addedAt", .integer).notNull()
            Column("removedAt", .integer)
            PrimaryKey("datasetID", "tableName", "key", "bucketKind", "member", "value", "addedAt")
            Index("state_scope_grants_member", on: "datasetID", "bucketKind", "member")
        }
    }

    /// The rules the index was made under, from the position they took effect at.
    enum ScopeRulesApplied: Model {
        static let tableDefinition = TableDefinition(
            "state_scope_rules", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("fromPosition", .integer).notNull()
            Column("version", .integer).notNull()
            Column("rules", .text).notNull()
            Column("definition", .text).notNull()
            PrimaryKey("datasetID", "fromPosition")
        }
    }
}
