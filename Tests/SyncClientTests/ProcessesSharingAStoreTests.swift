import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import SyncProtocol
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
        let store = try Store()
        let (alice, carol) = (store.alice, store.carol)

        let aMinuteAhead = ChangeClock(
            validMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 60_000, counter: 0)
        try carol.log.clock.receive(aMinuteAhead)
        try carol.db.execute("UPDATE reminders SET title = 'oat milk' WHERE id = 'R'")
        _ = try carol.engine.sync()

        // Alice's daemon: another process, on the same files, while her app keeps them open.
        #expect(try store.syncAliceInAnotherProcess() == 0)
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

    /// Alice's clock ran a day ahead while she kept writing in the app; then it was put right. The
    /// server refuses clocks that far ahead, and her clock never goes back: without a repair, none
    /// of her edits would ever leave the device. Her daemon, a process of its own, re-stamps and
    /// pushes them; the app, open all along with its clock still a day ahead, follows the files
    /// back, so its next edit goes out as it is.
    @Test func editsMadeWhileTheClockRanAheadLeaveTheDeviceThroughTheDaemon() throws {
        let store = try Store()
        let (alice, carol) = (store.alice, store.carol)

        // The app's clock a day ahead: what the files hold says so (another connection writes
        // it, so the app's clock catches up with it at its next write, as with a wrong wall clock).
        let aDayAhead = (Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000) << 16
        let wrongClock = try Database(path: store.directory.path(".") + "/alice.sqlite")
        try Metadatabase.attach(to: wrongClock)
        try wrongClock.execute("UPDATE ostore_meta.ostore_store SET lastClock = \(aDayAhead)")
        try wrongClock.close()
        func titleClock() throws -> Int64 {
            try alice.log.foldJournal(alice.db)
            return try #require(
                try alice.db.fetchValue(
                    Int64.self,
                    "SELECT clock FROM ostore_meta.ostore_changes WHERE pk = 'R' AND columnName = 'title'"))
        }
        try alice.db.execute("UPDATE reminders SET title = 'oat milk' WHERE id = 'R'")
        #expect(try titleClock() > aDayAhead)

        #expect(try store.syncAliceInAnotherProcess() == 0)
        _ = try carol.engine.sync()
        #expect(try carol.db.fetchValue(String.self, "SELECT title FROM reminders WHERE id = 'R'") == "oat milk")
        #expect(try alice.log.refusedOutgoingChanges(alice.db).isEmpty)

        try alice.db.execute("UPDATE reminders SET title = 'almond milk' WHERE id = 'R'")
        #expect(try titleClock() <= alice.log.clock.driftBound.packed)
        let report = try alice.engine.sync()
        #expect(report.restamped == 0 && report.refusedOutgoing == 0 && report.pushed == 1)
        _ = try carol.engine.sync()
        #expect(try carol.db.fetchValue(String.self, "SELECT title FROM reminders WHERE id = 'R'") == "almond milk")
    }
}

/// Alice's store and Carol's, synced once through a live server: a reminder `R` in a list `L`.
private struct Store {
    let directory: TemporaryDirectory
    let server: LiveServer
    let token: String
    let alice: SyncPeer
    let carol: SyncPeer

    init() throws {
        directory = try TemporaryDirectory()
        server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        token = try makeDataset(server, "reminders")
        alice = try SyncPeer(
            name: "alice", path: directory.path("alice.sqlite"), server: server.baseURL, dataset: "reminders",
            token: token)
        carol = try SyncPeer(
            name: "carol", path: directory.path("carol.sqlite"), server: server.baseURL, dataset: "reminders",
            token: token)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R', 'milk', 'L')")
        _ = try alice.engine.sync()
        _ = try carol.engine.sync()
    }

    /// `reminders sync` on Alice's files, a process of its own (as her daemon is) while her app keeps
    /// them open; its exit status.
    func syncAliceInAnotherProcess() throws -> Int32 {
        let daemon = Process()
        daemon.executableURL = try builtProduct("reminders")
        daemon.arguments = ["--db", directory.path("alice.sqlite"), "sync", "--server", server.baseURL.absoluteString]
        daemon.environment = ["OSTORE_TOKEN": token]
        daemon.standardOutput = FileHandle.nullDevice
        try daemon.run()
        daemon.waitUntilExit()
        return daemon.terminationStatus
    }
}
