import Foundation
import OfflineStore
import RemindersModel

/// The input files of the migration workloads, made once per size in a temporary directory and
/// copied before each run (outside the clock), so every run of either side starts from the same bytes.
struct MigrationFixtures {
    let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ostore-bench-migration-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func removeAll() {
        try? FileManager.default.removeItem(at: directory)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// A Reminders 1.0.0 database holding `rows` reminders over 100 lists, with random UUID-like
    /// text keys as the app writes them and a due date on every third reminder.
    func remindersAtFirstRelease(rows: Int) throws -> String {
        let path = path("reminders-1.0.0-\(rows).sqlite")
        let db = try Database(path: path)
        try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.transaction(.immediate) { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
                    INSERT INTO remindersLists (id, name) SELECT lower(hex(randomblob(16))), 'List ' || i FROM n
                    """)
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
                    INSERT INTO reminders (id, title, listID, dueDate, isDone)
                    SELECT lower(hex(randomblob(16))), 'Reminder #' || i,
                        (SELECT id FROM remindersLists WHERE rowid = 1 + i % 100),
                        CASE WHEN i % 3 = 0 THEN date('2024-01-01', '+' || (i % 365) || ' days') END, i % 2
                    FROM n
                    """, arguments: [Int64(rows - 1)])
        }
        try finish(db)
        return path
    }

    /// `source` (a Reminders 1.0.0 file) migrated to 1.1.0 by the Reminders plan.
    func remindersAtSecondRelease(from source: String, rows: Int) throws -> String {
        let path = try copy(source, to: "reminders-1.1.0-\(rows).sqlite")
        let db = try Database(path: path)
        try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: "1.1.0").migrate(db)
        try finish(db)
        return path
    }

    /// A database of the twenty-table plan, migrated to its latest version, 100 rows per table.
    func wide() throws -> String {
        let path = path("wide.sqlite")
        let db = try Database(path: path)
        try Migrator(plan: WideBenchPlan.self).migrate(db)
        try db.transaction(.immediate) { db in
            for number in 1...WideBenchPlan.tableCount {
                try db.execute(
                    sql: """
                        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
                        INSERT INTO wide\(number) (id, name, position, updatedAt)
                        SELECT lower(hex(randomblob(16))), 'Item ' || i, i, 1.7e9 + i FROM n
                        """)
            }
        }
        try finish(db)
        return path
    }

    /// Replaces `name` with a fresh copy of `source`, and returns its path. A stale `-wal` beside
    /// the old copy would be replayed into the new one, so it goes too. The copy is flushed to disk
    /// so the timed run that follows does not pay for the kernel writing it back.
    @discardableResult
    func copy(_ source: String, to name: String) throws -> String {
        let destination = path(name)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: destination + suffix) {
            try FileManager.default.removeItem(atPath: destination + suffix)
        }
        try FileManager.default.copyItem(atPath: source, toPath: destination)
        sync()
        return destination
    }

    /// Moves everything into the main file so the file alone can be copied.
    private func finish(_ db: Database) throws {
        try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        try db.close()
    }
}
