import Foundation
import OfflineStore
import RemindersModel
import SyncServer
import TestSupport
import Testing

/// Devices syncing through different `ostore-server` processes over one PostgreSQL database, with
/// the real client (`reminders … sync`), end up with the same rows.
@Suite("Sync through several servers over PostgreSQL")
struct ScaleOutSyncTests {
    @Test func devicesOnDifferentServersConverge() throws {
        let directory = try TemporaryDirectory()
        let url = try PostgresCluster.shared().createDatabase()
        let servers = try (0..<2).map { index in
            try LiveServer(
                dataDirectory: URL(fileURLWithPath: directory.path("server\(index)")), backend: .postgres,
                postgresURL: url)
        }
        let token = try makeDataset(servers[0], "reminders")
        let reminders = try builtProduct("reminders")
        let alice = directory.path("alice.sqlite")
        let bob = directory.path("bob.sqlite")
        let carol = directory.path("carol.sqlite")

        func write(_ path: String, _ statements: [SQL]) throws {
            let db = try Database(path: path)
            _ = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            try db.transaction { db in
                for statement in statements { try db.execute(statement) }
            }
            try db.close()
        }
        func sync(_ path: String, through server: LiveServer) throws {
            let result = try run(
                reminders.path, ["--db", path, "sync", "--server", server.baseURL.absoluteString],
                environment: ["OSTORE_TOKEN": token])
            #expect(result.status == 0, "\(String(decoding: result.error, as: UTF8.self))")
        }
        func rows(_ path: String) throws -> [String] {
            let db = try Database(path: path)
            defer { try? db.close() }
            return try db.fetchAll(
                String.self, "SELECT id || ':' || title || ':' || ifnull(priority, '-') FROM reminders ORDER BY id")
        }

        try write(alice, ["INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')"])
        try write(alice, (0..<30).map { "INSERT INTO reminders (id, title, listID) VALUES (\("R\($0)"), 'new', 'L')" })
        try sync(alice, through: servers[0])
        try sync(bob, through: servers[1])
        try sync(carol, through: servers[0])
        #expect(try rows(bob).count == 30)

        // Edits on every device at once, each device on its own server; carol switches servers.
        try write(alice, ["UPDATE reminders SET title = 'alice' WHERE id IN ('R1', 'R2')"])
        try write(bob, ["UPDATE reminders SET priority = 2 WHERE id = 'R1'", "DELETE FROM reminders WHERE id = 'R3'"])
        try write(
            carol,
            [
                "UPDATE reminders SET title = 'carol' WHERE id = 'R2'",
                "INSERT INTO reminders (id, title, listID) VALUES ('C1', 'from carol', 'L')",
            ])
        for round in 0..<2 {
            try sync(alice, through: servers[0])
            try sync(bob, through: servers[1])
            try sync(carol, through: servers[round % 2 == 0 ? 1 : 0])
        }
        try sync(alice, through: servers[0])
        let expected = try rows(alice)
        #expect(try rows(bob) == expected)
        #expect(try rows(carol) == expected)
        #expect(expected.count == 30)
        #expect(expected.contains("R1:alice:2"))
        #expect(expected.contains("C1:from carol:-"))
        #expect(!expected.contains { $0.hasPrefix("R3:") })
        // R2 was edited on alice then carol; the later edit wins everywhere.
        #expect(expected.contains("R2:carol:-"))
    }
}
