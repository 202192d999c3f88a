import Foundation
import OfflineStore

/// One reminder: a Codable record stored in the `reminders` table.
struct Reminder: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "reminders"

    var id: String
    var title: String
    var done: Bool
    var createdAt: Date
}

enum ReminderStore {
    /// Opens (creating if needed) the reminders database at `path`.
    static func open(path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.logHandler = StandardErrorLogHandler(label: "reminders", minimumLevel: .warning)
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.write { db in
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS reminders (
                    id TEXT PRIMARY KEY NOT NULL,
                    title TEXT NOT NULL,
                    done INTEGER NOT NULL DEFAULT 0,
                    createdAt REAL NOT NULL
                ) STRICT
                """)
        }
        return pool
    }
}
