import Foundation
import OfflineStore
import SyncClient
import SyncServer
import TestSupport
import Testing

/// `ostore-server` killed with SIGKILL while it handles a large push or pull (the proxy holds
/// the client's request on the wire and kills the server once the request has reached it), then
/// started again on the same data: the client's retries complete the sync, nothing is lost and
/// nothing is stored or applied twice.
@Suite("Server killed in the middle of a request")
struct ServerKillTests {
    static let rows = 3_000

    /// A server, a proxy in front of it, a device with `rows` reminders made offline and one with
    /// none, both syncing through the proxy. The proxy stops when the stage is released.
    private struct Stage {
        let directory: TemporaryDirectory
        let server: LiveServer
        let proxy: FaultProxy
        let alice: SyncPeer
        let bob: SyncPeer

        init() throws {
            directory = try TemporaryDirectory()
            server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
            let token = try makeDataset(server, "family")
            proxy = try FaultProxy(upstreamPort: server.port)
            // The server is down for a moment: wait a little between attempts.
            var retry = RetryPolicy(maximumAttempts: 40)
            retry.sleep = { _ in usleep(50_000) }
            let (directory, proxy) = (directory, proxy)
            let devices = try ["alice", "bob"].map { name in
                try SyncPeer(
                    name: name, path: directory.path("\(name).sqlite"), server: proxy.baseURL, dataset: "family",
                    token: token, batchSize: ServerKillTests.rows + 1, pageSize: ServerKillTests.rows + 1, retry: retry)
            }
            (alice, bob) = (devices[0], devices[1])
            try alice.db.transaction { db in
                try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
                for index in 0..<ServerKillTests.rows {
                    try db.execute(
                        "INSERT INTO reminders (id, title, listID) VALUES (\("R\(index)"), \("r\(index)"), 'L')")
                }
            }
        }
    }

    /// When the kill comes, once the request has reached the server.
    enum KillMoment: Sendable, CustomTestStringConvertible {
        /// A fixed time later (microseconds).
        case after(UInt32)
        /// As soon as the server's write-ahead log grows: inside its write transaction.
        case whenTheServerWrites

        var testDescription: String {
            switch self {
            case .after(let microseconds): "\(microseconds / 1_000) ms after the request"
            case .whenTheServerWrites: "when the server writes"
            }
        }
    }

    /// Kills the server (and starts it again) once the first request to `endpoint` has reached
    /// it, at `moment`; what the server's log held right after the kill.
    private func killDuring(
        _ endpoint: String, _ moment: KillMoment, _ server: LiveServer, _ proxy: FaultProxy
    ) -> Locked<Int?> {
        let storedAtKill = Locked<Int?>(nil)
        let wal = server.dataDirectory.appendingPathComponent(SQLiteSyncStorage.fileName + "-wal").path
        @Sendable func walSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
        proxy.afterForwarding = { request in
            guard request.path.hasSuffix("/\(endpoint)"), storedAtKill.value == nil else { return }
            switch moment {
            case .after(let microseconds):
                usleep(microseconds)
            case .whenTheServerWrites:
                let before = walSize()
                _ = eventually(timeout: .seconds(10)) { walSize() != before }
            }
            do {
                try server.killAndRestart()
                proxy.upstreamPort = server.port
                storedAtKill.value = try server.loggedChanges(dataset: "family").count
            } catch {
                Issue.record("the server did not start again: \(error)")
            }
        }
        return storedAtKill
    }

    @Test(arguments: [.after(0), .after(20_000), .whenTheServerWrites] as [KillMoment])
    func killedDuringAPushTheBatchIsStoredOnce(moment: KillMoment) throws {
        let stage = try Stage()
        let (server, proxy, alice, bob) = (stage.server, stage.proxy, stage.alice, stage.bob)
        let storedAtKill = killDuring("push", moment, server, proxy)

        let report = try alice.engine.sync()
        // All or nothing: the kill left the batch whole or absent, and the retry completed it.
        #expect([0, Self.rows + 1].contains(storedAtKill.value ?? -1))
        #expect(report.pushed == Self.rows + 1)
        #expect(try alice.log.pendingCount(alice.db) == 0)
        #expect(try server.loggedChanges(dataset: "family").count == Self.rows + 1)
        #expect(try server.changesStoredTwice(dataset: "family").isEmpty)
        try bob.engine.sync()
        #expect(try bob.count("reminders") == Self.rows)
        #expect(try bob.contents() == alice.contents())
        print(
            "push killed \(moment.testDescription): the server then held \(storedAtKill.value ?? -1) changes"
        )
    }

    @Test(arguments: [.after(0), .after(20_000)] as [KillMoment])
    func killedDuringAPullThePageIsAppliedOnce(moment: KillMoment) throws {
        let stage = try Stage()
        let (server, proxy, alice, bob) = (stage.server, stage.proxy, stage.alice, stage.bob)
        try alice.engine.sync()
        // Bob's first pull is a snapshot; then a log pull of Alice's edits, also killed.
        let snapshotKill = killDuring("pull", moment, server, proxy)
        try bob.engine.sync()
        #expect(snapshotKill.value == Self.rows + 1)
        try alice.db.execute("UPDATE reminders SET isDone = 1")
        try alice.engine.sync()
        let logKill = killDuring("pull", moment, server, proxy)
        let report = try bob.engine.sync()
        #expect(logKill.value == 2 * Self.rows + 1)
        #expect(report.pulled == Self.rows)
        #expect(try bob.count("reminders") == Self.rows)
        #expect(try bob.db.fetchValue(Int.self, "SELECT sum(isDone) FROM reminders") == Self.rows)
        #expect(try bob.log.pendingCount(bob.db) == 0)
        #expect(try bob.contents() == alice.contents())
        #expect(try server.changesStoredTwice(dataset: "family").isEmpty)
        #expect(try bob.db.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
    }
}
