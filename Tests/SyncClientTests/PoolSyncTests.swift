import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import TestSupport
import Testing

/// An engine over a `DatabasePool`: syncs with `await`, takes the pool's writer only for each of
/// its steps, so the app writes through the same pool while a sync waits for the server.
@Suite("Syncing over a pool")
struct PoolSyncTests {
    let directory: TemporaryDirectory
    let server: LiveServer
    let token: String

    init() throws {
        directory = try TemporaryDirectory()
        server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
        token = try makeDataset(server, "family")
    }

    func configuration(_ url: URL) -> SyncEngine.Configuration {
        var configuration = SyncEngine.Configuration(server: url, dataset: "family", token: token)
        configuration.retry = SyncPeer.immediateRetries
        return configuration
    }

    /// A store over a pool, its change log opened on the pool's writer.
    func pooledStore(_ name: String, server url: URL? = nil) throws -> (DatabasePool, SyncEngine) {
        // One reader: the one the engine reads the queue on.
        let pool = try DatabasePool(path: directory.path("\(name).sqlite"), maximumReaderCount: 1)
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        let log = try pool.writeWithoutTransaction { db in try ChangeLog.open(db, migrator: migrator) }
        let engine = SyncEngine(
            pool: pool, log: log, transport: try HTTPClient(), configuration: configuration(url ?? server.baseURL))
        return (pool, engine)
    }

    @Test func aPooledStoreSyncsWithAwaitBothWays() async throws {
        let (pool, engine) = try pooledStore("alice")
        let bob = try SyncPeer(
            name: "bob", path: directory.path("bob.sqlite"), server: server.baseURL, dataset: "family", token: token)
        try await pool.write { db in try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')") }
        let pushed = try await engine.sync()
        #expect(pushed.pushed == 1)
        _ = try await bob.engine.sync()
        #expect(try bob.db.fetchAll(String.self, "SELECT name FROM remindersLists") == ["Home"])
        try bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('r', 'Milk', 'L')")
        _ = try await bob.engine.sync()
        let pulled = try await engine.sync()
        #expect(pulled.pulled == 1 && pulled.pushed == 0)
        // The queue was read on the reader, which has the metadatabase attached, read-only.
        let attached = try await pool.read { db in
            try db.fetchAll(String.self, "SELECT name FROM pragma_database_list WHERE name = 'ostore_meta'")
        }
        #expect(attached == ["ostore_meta"])
        await #expect(throws: DatabaseError.self) {
            try await pool.read { db in try db.execute("DELETE FROM ostore_meta.ostore_changes") }
        }
        #expect(try await pool.read { db in try db.fetchAll(String.self, "SELECT title FROM reminders") } == ["Milk"])
        #expect(try await pool.read { db in try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") } == 1)
        withExtendedLifetime(server) {}
    }

    /// While the server holds the pull's answer, the app writes through the pool: the sync holds
    /// the writer only for its own steps, not while it waits.
    @Test func theAppWritesThroughThePoolWhileASyncWaitsForTheServer() throws {
        let proxy = try FaultProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        let (pool, engine) = try pooledStore("alice", server: proxy.baseURL)
        let written = Locked<Result<Void, any Error>?>(nil)
        proxy.afterForwarding = { request in
            guard request.path.hasSuffix("/pull"), written.value == nil else { return }
            let outcome = Result {
                try onAnotherThread("a write while the pull waits", timeout: 10) {
                    try pool.write { db in try db.execute("INSERT INTO tags (id, name) VALUES ('t', 'during')") }
                }
            }
            written.value = outcome
        }
        _ = try engine.sync()
        try #require(written.value != nil)
        try written.value!.get()
        // The write was recorded and is pushed by the next sync.
        #expect(try engine.sync().pushed == 1)
        withExtendedLifetime(server) {}
    }

    /// Awaited, an engine over one `Database` syncs on the calling task's thread.
    @Test func anEngineOverOneDatabaseSyncsWhenAwaitedToo() async throws {
        let alice = try SyncPeer(
            name: "alice", path: directory.path("alice.sqlite"), server: server.baseURL, dataset: "family",
            token: token)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        #expect(try await alice.engine.sync().pushed == 1)
        withExtendedLifetime(server) {}
    }
}
