import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import TestSupport
import Testing

/// One store used by two processes at once, as the Reminders app and its daemon do: what one
/// process learns of other devices' clocks must order the other process's later writes after them.
@Suite("Processes sharing a store")
struct ProcessesSharingAStoreTests {
    /// Carol's phone runs a minute fast (within the drift the store accepts). Alice's daemon, a
    /// process of its own, pulls Carol's title; then Alice, in the app that was open all along,
    /// types a new title over it. Her edit came after Carol's, so it must win on every device.
    @Test func anEditAfterAnotherProcessPulledAFastClockWinsEverywhere() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "reminders")
        let alicePath = directory.path("alice.sqlite")
        let alice = try SyncPeer(
            name: "alice", path: alicePath, server: server.baseURL, dataset: "reminders", token: token)
        let carol = try SyncPeer(
            name: "carol", path: directory.path("carol.sqlite"), server: server.baseURL, dataset: "reminders",
            token: token)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R', 'milk', 'L')")
        _ = try alice.engine.sync()
        _ = try carol.engine.sync()

        let aMinuteAhead = HybridTimestamp(
            milliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 60_000, counter: 0)
        try carol.log.clock.receive(aMinuteAhead)
        try carol.db.execute("UPDATE reminders SET title = 'oat milk' WHERE id = 'R'")
        _ = try carol.engine.sync()

        // Alice's daemon: another process, on the same files, while her app keeps them open.
        let daemon = Process()
        daemon.executableURL = try builtProduct("reminders")
        daemon.arguments = ["--db", alicePath, "sync", "--server", server.baseURL.absoluteString]
        daemon.environment = ["OSTORE_TOKEN": token]
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        daemon.waitUntilExit()
        #expect(daemon.terminationStatus == 0)
        #expect(try alice.db.fetchValue(String.self, "SELECT title FROM reminders WHERE id = 'R'") == "oat milk")

        try alice.db.execute("UPDATE reminders SET title = 'almond milk' WHERE id = 'R'")
        _ = try alice.engine.sync()
        _ = try carol.engine.sync()
        for peer in [alice, carol] {
            #expect(
                try peer.db.fetchValue(String.self, "SELECT title FROM reminders WHERE id = 'R'") == "almond milk",
                "\(peer.name)")
        }
    }
}
