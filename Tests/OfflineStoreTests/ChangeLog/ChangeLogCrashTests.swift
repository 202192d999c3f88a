import Foundation
import OfflineStore
import RemindersModel
import Testing

/// kill -9 a process committing tracked transactions at random moments: after each kill both files
/// must be intact, every committed row change must be in the log (after reconciliation), and no
/// log entry may describe a change that did not commit.
@Suite("Crash while recording changes")
struct ChangeLogCrashTests {
    static let killPoints = 200

    @Test(.timeLimit(.minutes(10)))
    func killingAWriterAtRandomMomentsNeverLeavesTheLogAndTheDataApart() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        let writer = try builtProduct("ostore-crash-writer")
        var generator = SystemRandomNumberGenerator()
        for point in 0..<Self.killPoints {
            let process = Process()
            process.executableURL = writer
            process.arguments = ["--db", path]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: Double.random(in: 0.005...0.15, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()

            let db = try Database(path: path)
            #expect(try db.fetchValue(String.self, "PRAGMA main.integrity_check") == "ok", "kill \(point)")
            let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            #expect(try db.fetchValue(String.self, "PRAGMA ostore_meta.integrity_check") == "ok", "kill \(point)")
            // The checks below read the keyed log, as a push does after folding the journal.
            try log.foldJournal(db)
            #expect(try log.coversEveryChange(db), "kill \(point)")
            for table in ["remindersLists", "reminders", "tags"] {
                let problems = try Self.inconsistencies(in: db, table: table)
                #expect(problems.isEmpty, "kill \(point), \(table): \(problems)")
            }
            try db.close()
        }
        let db = try Database(path: directory.path("store.sqlite"))
        #expect(try db.count("reminders") + db.count("remindersLists") > 0, "the writer never committed anything")
    }

    /// Rows the log does not know were created, and log entries that claim a row exists (or was
    /// deleted) when the table says otherwise.
    static func inconsistencies(in db: Database, table: String) throws -> [String] {
        let tableID =
            try db.fetchValue(Int.self, "SELECT id FROM ostore_meta.ostore_tables WHERE name = \(table)") ?? -1
        let quoted = quoteIdentifier(table)
        let unlogged = try db.fetchAll(
            String.self,
            SQL(
                sql: """
                    SELECT id FROM main.\(quoted) AS t WHERE NOT EXISTS (
                        SELECT 1 FROM ostore_meta.ostore_changes AS c
                        WHERE c.tableID = ? AND c.pk = t.id AND c.columnName = '')
                    """, arguments: [.integer(Int64(tableID))]))
        let phantom = try db.fetchAll(
            String.self,
            SQL(
                sql: """
                    SELECT c.pk FROM ostore_meta.ostore_changes AS c
                    WHERE c.tableID = ? AND c.columnName = ''
                      AND NOT EXISTS (SELECT 1 FROM main.\(quoted) AS t WHERE t.id = c.pk)
                      AND NOT EXISTS (SELECT 1 FROM ostore_meta.ostore_changes AS d
                                      WHERE d.tableID = c.tableID AND d.pk = c.pk AND d.columnName = '-' AND d.clock > c.clock)
                    """, arguments: [.integer(Int64(tableID))]))
        let wronglyDeleted = try db.fetchAll(
            String.self,
            SQL(
                sql: """
                    SELECT d.pk FROM ostore_meta.ostore_changes AS d
                    WHERE d.tableID = ? AND d.columnName = '-'
                      AND EXISTS (SELECT 1 FROM main.\(quoted) AS t WHERE t.id = d.pk)
                      AND NOT EXISTS (SELECT 1 FROM ostore_meta.ostore_changes AS c
                                      WHERE c.tableID = d.tableID AND c.pk = d.pk AND c.columnName = '' AND c.clock > d.clock)
                    """, arguments: [.integer(Int64(tableID))]))
        return unlogged.map { "row \($0) has no log entry" } + phantom.map { "log says \($0) exists" }
            + wronglyDeleted.map { "log says \($0) was deleted" }
    }
}
