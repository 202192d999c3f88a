import Foundation
import OfflineStore
import SyncClient
import TestSupport
import Testing

/// Devices syncing over HTTP with an `ostore-server` whose data directory goes back to an earlier
/// copy: what the restored server lacks reaches it again and no device misses a change.
@Suite struct ServerRestoreTests {
    private final class Device {
        let db: Database
        let engine: SyncEngine

        init(_ path: String, server: LiveServer, token: String) throws {
            db = try Database(path: path)
            let log = try ChangeLog.open(db, migrator: try Migrator(plan: NotesPlan.self))
            engine = try makeEngine(db: db, log: log, server: server.baseURL, token: token, caFile: nil)
        }

        func add(_ id: String, _ title: String) throws {
            try db.execute("INSERT INTO notes (id, title) VALUES (\(id), \(title))")
        }

        var notes: [String] {
            get throws { try db.fetchAll(String.self, "SELECT id || ':' || title FROM notes ORDER BY id") }
        }
    }

    /// `ostore-server restore` (new incarnation) or the file copied back by hand while stopped
    /// (the server then refuses only cursors past its newest change).
    @Test(arguments: [true, false])
    func devicesRecoverFromAServerRestoredFromAnEarlierCopy(usingRestoreCommand: Bool) throws {
        let directory = try TemporaryDirectory()
        let data = directory.url.appendingPathComponent("data")
        let server = try LiveServer(dataDirectory: data)
        let token = try makeDataset(server, "notes")
        let alice = try Device(directory.path("alice.sqlite"), server: server, token: token)
        let bob = try Device(directory.path("bob.sqlite"), server: server, token: token)
        // Dave only reads: no hello can tell him the server lost anything of his.
        let dave = try Device(directory.path("dave.sqlite"), server: server, token: token)
        try alice.add("a1", "before the backup")
        try alice.engine.sync()
        try bob.engine.sync()

        let backup = directory.path("backup.sqlite")
        let serverFile = data.appendingPathComponent("server.sqlite").path
        #expect(try run("/usr/bin/sqlite3", [serverFile, ".backup \(backup)"]).status == 0)
        // After the backup: acknowledged pushes from both, pulled by the other, cursors move on.
        try alice.add("a2", "after the backup")
        try alice.add("a3", "after the backup")
        try bob.add("b1", "after the backup")
        try alice.engine.sync()
        try bob.engine.sync()
        try alice.engine.sync()
        try dave.engine.sync()
        #expect(try alice.notes.count == 4 && bob.notes == alice.notes && dave.notes == alice.notes)

        #expect(server.stop() == 0)
        if usingRestoreCommand {
            let restore = try run(try builtProduct("ostore-server").path, ["restore", backup, "--data", data.path])
            #expect(restore.status == 0, "\(String(decoding: restore.error, as: UTF8.self))")
        } else {
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: serverFile + suffix) }
            try FileManager.default.removeItem(atPath: serverFile)
            try FileManager.default.copyItem(atPath: backup, toPath: serverFile)
        }
        try server.startAgainOnSamePort()

        // Bob syncs first: he learns the server lost his b1, and downloads again.
        let bobReport = try bob.engine.sync()
        #expect(bobReport.requeued == 1 && bobReport.pushed == 1 && bobReport.redownloaded)
        // Carol starts on the restored server and writes.
        let carol = try Device(directory.path("carol.sqlite"), server: server, token: token)
        try carol.engine.sync()
        try carol.add("c1", "on the restored server")
        try carol.engine.sync()
        let aliceReport = try alice.engine.sync()
        #expect(aliceReport.requeued == 2 && aliceReport.pushed == 2 && aliceReport.redownloaded)
        // The log has grown past Dave's cursor again, with other changes (Carol's among them).
        #expect(try dave.engine.sync().redownloaded)
        for device in [carol, bob, alice, carol] { try device.engine.sync() }
        let expected = [
            "a1:before the backup", "a2:after the backup", "a3:after the backup", "b1:after the backup",
            "c1:on the restored server",
        ]
        #expect(try alice.notes == expected)
        #expect(try bob.notes == expected)
        #expect(try carol.notes == expected)
        #expect(try dave.notes == expected)
    }
}
