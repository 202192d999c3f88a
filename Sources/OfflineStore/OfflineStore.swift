// The product apps import: the store's three layers, re-exported, so `import OfflineStore` gives
// the SQLite layer, schemas and migrations, and the change log (docs/ARCHITECTURE.md, "Targets
// and layers"). The two protocol values the store's API is made of come with them: a schema's
// version (`Schema.Version`) and a clock reading; and the release this build is.
@_exported import OfflineStoreChangeLog
@_exported import OfflineStoreMigrations
@_exported import OfflineStoreSQLite

@_exported import struct SyncProtocol.ChangeClock
@_exported import enum SyncProtocol.OfflineStoreRelease
@_exported import struct SyncProtocol.SchemaVersion
