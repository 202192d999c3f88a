import OfflineStoreMigrations

/// Version 1.1 of the metadatabase adds what a sync engine keeps between runs: per server and
/// dataset, the pull cursor and the last outcome; and the changes a server refused, kept with
/// its reason instead of being dropped.
enum MetadatabaseV1_1: LibrarySchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = MetadatabaseV1.models + [SyncEndpoint.self, RefusedOutgoingEntry.self]

    /// One row per server URL and dataset this store syncs with.
    enum SyncEndpoint: Model {
        static let tableDefinition = TableDefinition("ostore_sync", sync: .localOnly, options: [.strict]) {
            Column("endpoint", .text).primaryKey()
            Column("cursor", .text)
            Column("lastSyncAt", .real)
            Column("lastError", .text)
            Column("protocolVersion", .integer)
            Column("datasetSchemaVersion", .text)
        }
    }

    /// A local change the server refused (a 4xx for that change), with the server's reason.
    enum RefusedOutgoingEntry: Model {
        static let tableDefinition = TableDefinition("ostore_rejected", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("rejectedAt", .real).notNull()
            Column("code", .text).notNull()
            Column("reason", .text).notNull()
            /// The change as pushed (the protocol's JSON).
            Column("change", .text).notNull()
        }
    }
}
