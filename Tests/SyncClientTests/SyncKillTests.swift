import Foundation
import OfflineStore
import RemindersModel
import SyncServer
import TestSupport
import Testing

/// `reminders … sync` killed with SIGKILL at random moments, again and again: every later sync
/// must complete with nothing lost and nothing stored twice.
@Suite("Sync killed at random moments")
struct SyncKillTests {
    @Test func killingSyncsAtRandomMomentsLosesAndDuplicatesNothing() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "reminders")
        let reminders = try builtProduct("reminders")
        let alice = directory.path("alice.sqlite")
        let bob = directory.path("bob.sqlite")

        // Several push batches and pull pages' worth of changes.
        let rows = 2_500
        do {
            let db = try Database(path: alice)
            _ = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            try db.transaction { db in
                try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
                for index in 0..<rows {
                    try db.execute(
                        "INSERT INTO reminders (id, title, listID) VALUES (\(UUID().uuidString), \("r\(index)"), 'L')")
                }
            }
            try db.close()
        }
        func sync(_ path: String) throws -> Process {
            let process = Process()
            process.executableURL = reminders
            process.arguments = ["--db", path, "sync", "--server", server.baseURL.absoluteString]
            process.environment = ["OSTORE_TOKEN": token]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<24 {
            // Alternate the two devices so kills land in pushes, snapshots and log pulls.
            let process = try sync(round % 3 == 2 ? bob : alice)
            usleep(UInt32.random(in: 20_000...400_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        for path in [alice, bob, alice] {
            let process = try sync(path)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        // Every change stored once: the insert of each row and of the list, nothing more.
        #expect(try server.storage().datasets().first?.changes == Int64(rows + 1))
        for path in [alice, bob] {
            let db = try Database(path: path)
            #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") == rows)
            #expect(try db.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
            try db.close()
            let meta = try Database(path: path + "-ostore-meta")
            #expect(try meta.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
            try meta.close()
        }
    }
}
