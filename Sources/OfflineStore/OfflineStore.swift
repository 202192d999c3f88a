// The product apps import: the store's three layers, re-exported, so `import OfflineStore` gives
// the SQLite layer, schemas and migrations, and the change log (docs/ARCHITECTURE.md, "Targets
// and layers").
@_exported import OfflineStoreChangeLog
@_exported import OfflineStoreMigrations
@_exported import OfflineStoreSQLite
