import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Storage as an earlier release wrote it (SQLite server schema up to `sqliteVersion`, PostgreSQL
/// migrations below `postgresMigration`), filled by `sqlite` or `postgres`, then opened by this
/// release, which migrates it: what the upgrade tests start from.
///
/// ```swift
/// let storage = try storageOfAnEarlierRelease(.sqlite, in: directory, sqliteVersion: "1.6.0", postgresMigration: 6,
///     sqlite: ["INSERT INTO server_datasets …"], postgres: "INSERT INTO server_datasets …")
/// ```
func storageOfAnEarlierRelease(
    _ backend: StorageBackend, in directory: TemporaryDirectory, sqliteVersion: Schema.Version,
    postgresMigration: Int, sqlite: [SQL], postgres: String
) throws -> any SyncStorage {
    switch backend {
    case .sqlite:
        let data = URL(fileURLWithPath: directory.path("data"))
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let old = try Database(path: data.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        try Migrator(plan: ServerMigrationPlan.self, releasedUpTo: sqliteVersion).migrate(old)
        for statement in sqlite { try old.execute(statement) }
        try old.close()
        return try SQLiteSyncStorage(directory: data)
    case .postgres:
        let url = try PostgresCluster.shared().createDatabase()
        try PostgresMigration.migrate(
            try PostgresConnection(url: url), PostgresMigration.all.filter { $0.version < postgresMigration })
        try PostgresCluster.shared().execute(postgres, in: url)
        let storage = try PostgresSyncStorage(url: url, connections: 1)
        let ledger = try PostgresConnection(url: url).execute(PostgresSyncStorage.Statements.appliedMigrations)
        #expect(ledger.rowCount == PostgresMigration.all.count)
        let last = postgresMigration - 1
        #expect(try ledger.string(row: last, column: 1) == PostgresMigration.all[last].checksum)
        return storage
    }
}
