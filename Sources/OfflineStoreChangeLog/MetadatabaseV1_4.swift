import OfflineStoreMigrations

/// Version 1.4 of the metadatabase keeps what a download that replaces the store's rows needs
/// across syncs (``ReplacingDownloadPage``): per server and dataset whether one is under way, and
/// the rows its pages gave so far. A metadatabase at 1.3 upgrades with no download under way.
enum MetadatabaseV1_4: LibrarySchema {
    static let versionIdentifier: Schema.Version = "1.4.0"
    static let models: [any Model.Type] =
        MetadatabaseV1_3.models.filter { $0.tableDefinition.name != SyncEndpoint.tableDefinition.name } + [
            SyncEndpoint.self, DownloadedRow.self,
        ]

    /// As in 1.2, with `replacingDownload`: 1 while a download under way replaces what the store
    /// holds (it started after the server refused the cursor), NULL otherwise.
    enum SyncEndpoint: Model {
        static let tableDefinition = TableDefinition("ostore_sync", sync: .localOnly, options: [.strict]) {
            Column("endpoint", .text).primaryKey()
            Column("cursor", .text)
            Column("lastSyncAt", .real)
            Column("lastError", .text)
            Column("protocolVersion", .integer)
            Column("datasetSchemaVersion", .text)
            Column("acknowledgedThrough", .integer)
            Column("replacingDownload", .integer)
        }
    }

    /// A row a replacing download's pages gave: its table's name in lower case and its key as the
    /// log stores it (``ChangeLog/downloadedKey(table:primaryKey:)``).
    enum DownloadedRow: Model {
        static let tableDefinition = TableDefinition(
            "ostore_downloaded", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("tableName", .text).notNull()
            Column("pk", .any).notNull()
            PrimaryKey("tableName", "pk")
        }
    }
}
