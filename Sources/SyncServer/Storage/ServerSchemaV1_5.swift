import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.5 keeps the keys that authenticate pull cursors (``CursorKey``), so every server of a
/// deployment and every restart signs and checks cursors alike, and a backup of `server.sqlite`
/// carries them. The first is made on first need (``SQLiteSyncStorage/cursorKeys()``); cursors
/// issued before 1.5 carry no MAC and are refused, so each device downloads its datasets once after
/// the upgrade.
enum ServerSchemaV1_5: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.5.0"
    static let models: [any Model.Type] = [
        ServerSchemaV1_4.Dataset.self, ServerSchemaV1.DatasetSchema.self, ServerSchemaV1.Token.self,
        ServerSchemaV1.Site.self, ServerSchemaV1_4.LogEntry.self, ServerSchemaV1_3.RowState.self,
        ServerSchemaV1.CellState.self, StoredCursorKey.self,
    ]

    /// `id` numbers the keys in the order they were made: servers sign with the highest and accept
    /// it and the one before it. `secret` is 32 random bytes.
    enum StoredCursorKey: Model {
        static let tableDefinition = TableDefinition("server_cursor_keys", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("secret", .blob).notNull()
            Column("createdAt", .real).notNull()
        }
    }
}
