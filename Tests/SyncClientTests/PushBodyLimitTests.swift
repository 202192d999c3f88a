import Foundation
import OfflineStore
import SyncClient
import TestSupport
import Testing

/// A server whose body limit (`--max-body-bytes`, announced in the hello) is far below what a
/// batch of `pushBatchSize` changes weighs: the engine sends the queue in pushes the server takes.
@Suite("Push bodies within the server's limit")
struct PushBodyLimitTests {
    /// A server taking request bodies of at most 4,096 bytes, a dataset, and two devices on it;
    /// alice pushes in batches of `batchSize` changes.
    static func devicesOnASmallBodyLimit(_ directory: TemporaryDirectory, batchSize: Int) throws -> (
        LiveServer, alice: SyncPeer, bob: SyncPeer
    ) {
        let server = try LiveServer(
            dataDirectory: directory.url.appendingPathComponent("data"), arguments: ["--max-body-bytes", "4096"])
        let token = try makeDataset(server, "family")
        let alice = try SyncPeer(
            name: "alice", path: directory.path("alice.sqlite"), server: server.baseURL, dataset: "family",
            token: token, batchSize: batchSize)
        let bob = try SyncPeer(
            name: "bob", path: directory.path("bob.sqlite"), server: server.baseURL, dataset: "family", token: token)
        return (server, alice, bob)
    }

    @Test func aBatchTooLargeForTheServersBodyLimitIsSentInSmallerPushes() throws {
        let directory = try TemporaryDirectory()
        let (server, alice, bob) = try Self.devicesOnASmallBodyLimit(directory, batchSize: 5_000)
        // About 400 bytes per change on the wire: 41 changes need five pushes or more.
        let title = String(repeating: "wide ", count: 60)
        try alice.db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
            for index in 0..<40 {
                try db.execute(
                    "INSERT INTO reminders (id, title, listID) VALUES (\("R\(index)"), \(title + String(index)), 'L')")
            }
        }

        let pushed = try alice.engine.sync()
        #expect(pushed.pushed == 41)
        #expect(try alice.log.pendingCount(alice.db) == 0)
        let pulled = try bob.engine.sync()
        #expect(pulled.pulled == 41)
        #expect(try bob.count("reminders") == 40)
        #expect(
            try bob.db.fetchValue(String.self, "SELECT title FROM reminders WHERE id = 'R39'") == title + "39")
        withExtendedLifetime(server) {}
    }

    /// Regression: a change too large for the server's body limit on its own was sent, refused
    /// with 413, and failed the sync, every sync, so nothing queued after it was ever pushed.
    @Test func aChangeTooLargeForTheServerOnItsOwnIsKeptAsRefusedAndTheRestIsPushed() throws {
        let directory = try TemporaryDirectory()
        let (server, alice, bob) = try Self.devicesOnASmallBodyLimit(directory, batchSize: 1_000)
        try alice.db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
            try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('before', 'small', 'L')")
            try db.execute(
                "INSERT INTO reminders (id, title, listID) VALUES ('huge', \(String(repeating: "x", count: 8_000)), 'L')"
            )
            try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('after', 'small too', 'L')")
        }

        let report = try alice.engine.sync()
        #expect(report.pushed == 3)
        #expect(report.refusedOutgoing == 1)
        #expect(try alice.log.pendingCount(alice.db) == 0)
        let refused = try alice.log.refusedOutgoingChanges(alice.db)
        #expect(refused.map(\.code) == ["body_too_large"])
        #expect(refused.first?.change.contains("huge") == true)
        #expect(refused.first?.reason.contains("4096") == true)
        // The row stays on the device that wrote it; the others reach the other device.
        #expect(try alice.count("reminders") == 3)

        _ = try bob.engine.sync()
        #expect(try bob.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["after", "before"])
        #expect(try alice.engine.sync().refusedOutgoing == 0)
        withExtendedLifetime(server) {}
    }
}
