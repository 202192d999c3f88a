import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.8 lets a token name its user and expire (`ostore-server token create --subject ID
/// --claim NAME=VALUE --expires WHEN`): `subject` is the user, `claims` a JSON object of the
/// token's claims (names to strings), `expiresAt` when it stops being accepted. Tokens made
/// before 1.8 have none of them: they stand for whoever holds them and never expire.
enum ServerSchemaV1_8: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.8.0"
    static let models: [any Model.Type] = [
        ServerSchemaV1_6.Dataset.self, ServerSchemaV1.DatasetSchema.self, Token.self,
        ServerSchemaV1_6.Site.self, ServerSchemaV1_4.LogEntry.self, ServerSchemaV1_3.RowState.self,
        ServerSchemaV1.CellState.self, ServerSchemaV1_5.StoredCursorKey.self,
        ServerSchemaV1_7.DatasetSchemaDefinition.self,
    ]

    /// Only the SHA-256 digest of each token is kept, with whom it stands for and until when.
    enum Token: Model {
        static let tableDefinition = TableDefinition("server_tokens", sync: .localOnly, options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("datasetID", .integer).notNull().references("server_datasets", "id")
            Column("digest", .blob).notNull().unique()
            Column("readOnly", .integer).notNull()
            Column("createdAt", .real).notNull()
            Column("revokedAt", .real)
            Column("subject", .text)
            Column("claims", .text)
            Column("expiresAt", .real)
        }
    }
}
