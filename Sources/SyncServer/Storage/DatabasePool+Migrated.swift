import OfflineStoreMigrations
import OfflineStoreSQLite

extension DatabasePool {
    /// A pool on the server's file at `path`, migrated to `plan`'s newest schema first (on a
    /// connection of its own, closed before the pool opens) and its writer given `writerSettings`
    /// (`PRAGMA`s that hold per connection: readers keep SQLite's defaults).
    ///
    /// ```swift
    /// let pool = try DatabasePool.migrated(
    ///     path: path, plan: ServerMigrationPlan.self, configuration: configuration,
    ///     writerSettings: ["PRAGMA cache_size = -32768"])
    /// ```
    ///
    /// See <https://www.sqlite.org/pragma.html>.
    static func migrated(
        path: String, plan: any MigrationPlan.Type, configuration: Configuration, writerSettings: [String]
    ) throws -> DatabasePool {
        let setup = try Database(path: path)
        do {
            // No change log opens the server's files: a migrator without its bookkeeping (ChangeLogBookkeeping).
            try Migrator(plan: plan, bookkeeping: nil).migrate(setup)
        } catch {
            try? setup.close()
            throw error
        }
        try setup.close()
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            for setting in writerSettings { try db.execute(sql: setting) }
        }
        return pool
    }
}
