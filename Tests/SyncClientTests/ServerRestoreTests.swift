import Foundation
import OfflineStore
import SyncClient
import TestSupport
import Testing

/// Devices syncing over HTTP with an `ostore-server` whose storage goes back to an earlier copy (its
/// data directory, or its PostgreSQL database through `pg_restore`): what the restored server lacks
/// reaches it again and no device misses a change.
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

    /// How the earlier copy is put back, with the server stopped.
    enum PutBack: Sendable, CustomStringConvertible {
        /// `ostore-server restore`: every dataset gets a new incarnation.
        case restoreCommand
        /// `server.sqlite` alone copied back: the server notices the shorter log at start from
        /// `server.sqlite-served`, which stayed.
        case fileCopiedBack
        /// The whole data directory copied back, `server.sqlite-served` as it was at the backup
        /// too; or a `pg_restore` without `ostore-server restore`. Neither the incarnation nor the
        /// served serials tell: only the log's fingerprints in the cursors do.
        case copiedBackWithNothingElse

        var description: String {
            switch self {
            case .restoreCommand: "ostore-server restore"
            case .fileCopiedBack: "server.sqlite copied back"
            case .copiedBackWithNothingElse: "copied back with nothing else"
            }
        }
    }

    // Regression (copiedBackWithNothingElse): a device that only reads kept its cursor after the
    // storage was put back by hand and the log grew past it again, and never got the changes the
    // restored server numbered at the serials it had read.
    @Test(arguments: [
        (StorageBackend.sqlite, PutBack.restoreCommand), (.sqlite, .fileCopiedBack),
        (.sqlite, .copiedBackWithNothingElse), (.postgres, .restoreCommand), (.postgres, .copiedBackWithNothingElse),
    ])
    func devicesRecoverFromAServerRestoredFromAnEarlierCopy(_ backend: StorageBackend, putBack: PutBack) throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"), backend: backend)
        let token = try makeDataset(server, "notes")
        let alice = try Device(directory.path("alice.sqlite"), server: server, token: token)
        let bob = try Device(directory.path("bob.sqlite"), server: server, token: token)
        // Dave only reads: no hello can tell him the server lost anything of his.
        let dave = try Device(directory.path("dave.sqlite"), server: server, token: token)
        try alice.add("a1", "before the backup")
        try alice.engine.sync()
        try bob.engine.sync()

        let backup = directory.path("backup")
        try server.backUp(to: backup)
        // What a copy of the whole data directory holds beside the database.
        let served = directory.url.appendingPathComponent("data/server.sqlite-served")
        let servedAtBackup = try? Data(contentsOf: served)
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
        if let restore = try server.restore(from: backup, byHand: putBack != .restoreCommand) {
            #expect(restore.status == 0, "\(String(decoding: restore.error, as: UTF8.self))")
        }
        if backend == .sqlite, putBack == .copiedBackWithNothingElse {
            try #require(servedAtBackup).write(to: served)
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
