import OfflineStoreMigrations
import OfflineStoreSQLite

/// Version 1.9 keeps each dataset's scope rules (``ScopeRules``): the rules file as it was given,
/// the schema definition it was checked against, and a version that grows with every change, by
/// which the state's scope index (``ServerStateSchemaV1_1``) knows it is out of date.
enum ServerSchemaV1_9: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.9.0"
    static let models: [any Model.Type] = ServerSchemaV1_8.models + [DatasetScopeRules.self]

    enum DatasetScopeRules: Model {
        static let tableDefinition = TableDefinition("server_scope_rules", sync: .localOnly, options: [.strict]) {
            Column("datasetID", .integer).primaryKey().references("server_datasets", "id")
            Column("version", .integer).notNull()
            Column("rules", .text).notNull()
            Column("definition", .text).notNull()
            Column("setAt", .real).notNull()
        }
    }
}
