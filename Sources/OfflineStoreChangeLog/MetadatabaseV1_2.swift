import OfflineStoreMigrations

/// Version 1.2 of the metadatabase keeps what sync must not lose silently: changes pulled from
/// other sites that this store refused (with the reason), and per server and dataset the highest
/// `seq` the server acknowledged, so a server restored from a backup is noticed and the changes it
/// lost are pushed again.
enum MetadatabaseV1_2: LibrarySchema {
    static let versionIdentifier: Schema.Version = "1.2.0"
    static let models: [any Model.Type] =
        MetadatabaseV1.models + [
            SyncEndpoint.self, MetadatabaseV1_1.RefusedOutgoingEntry.self, RefusedIncomingEntry.self,
        ]

    /// One row per server URL and dataset this store syncs with; `acknowledgedThrough` is the
    /// highest `seq` that server acknowledged (a push answer's `acknowledgedThrough`).
    enum SyncEndpoint: Model {
        static let tableDefinition = TableDefinition("ostore_sync", sync: .localOnly, options: [.strict]) {
            Column("endpoint", .text).primaryKey()
            Column("cursor", .text)
            Column("lastSyncAt", .real)
            Column("lastError", .text)
            Column("protocolVersion", .integer)
            Column("datasetSchemaVersion", .text)
            Column("acknowledgedThrough", .integer)
        }
    }

    /// A change from another site this store refused to apply (a value of the wrong type for a
    /// STRICT column, a name that is not an identifier, a key that is not the table's), with the
    /// reason: kept for the user or a fixed release to look at, never dropped.
    enum RefusedIncomingEntry: Model {
        static let tableDefinition = TableDefinition("ostore_refused", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("refusedAt", .real).notNull()
            Column("tableName", .text).notNull()
            Column("reason", .text).notNull()
            /// The whole ``IncomingChange`` as JSON, values type-faithful (as in the stash).
            Column("change", .text).notNull()
        }
    }
}
