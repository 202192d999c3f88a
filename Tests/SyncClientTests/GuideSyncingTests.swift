import Dispatch
import Foundation
import OfflineStore
import SyncClient
import SyncProtocol
import SyncServer
import TestSupport
import Testing

// docs/syncing-and-version-skew.md: its Swift blocks are the regions below, verbatim, built on
// the README tour's notes app (ReadmeAppTourTests); the tests run them against a live
// ostore-server through the version skews the guide describes.

// syncing-engine:begin
/// One engine per store, server and dataset: make it once, call `sync()` as often as needed.
func makeEngine(db: Database, log: ChangeLog, server: URL, token: String, caFile: String?) throws -> SyncEngine {
    var configuration = SyncEngine.Configuration(server: server, dataset: "notes", token: token)
    configuration.pushBatchSize = 500  // the server's maxChangesPerPush caps it too
    configuration.retry = RetryPolicy(maximumAttempts: 3)  // per request, for retryable faults only
    let transport = try HTTPClient(configuration: .init(caFile: caFile))  // nil: the system's CAs
    return SyncEngine(db: db, log: log, transport: transport, configuration: configuration)
}
// syncing-engine:end

// syncing-pool:begin
/// An app that reads and writes on several threads: one pool, the change log opened on its writer,
/// and an engine that takes the writer only for each of its steps, awaited with `try await engine.sync()`.
func makePooledEngine(path: String, server: URL, token: String) throws -> (pool: DatabasePool, engine: SyncEngine) {
    let pool = try DatabasePool(path: path)
    let migrator = try Migrator(plan: NotesPlan.self)
    let log = try pool.writeWithoutTransaction { db in try ChangeLog.open(db, migrator: migrator) }
    let configuration = SyncEngine.Configuration(server: server, dataset: "notes", token: token)
    return (pool, SyncEngine(pool: pool, log: log, transport: try HTTPClient(), configuration: configuration))
}
// syncing-pool:end

// syncing-outcome:begin
/// One sync, told as a line for the user.
func syncAndDescribe(_ engine: SyncEngine) -> String {
    do {
        let report = try engine.sync()
        var line = "pushed \(report.pushed), pulled \(report.pulled), refused \(report.refusedOutgoing), "
        line += "refused here \(report.refusedIncoming), waiting for an upgrade \(report.stashed)"
        if report.requeued > 0 { line += "; sent again \(report.requeued) the server had lost" }
        if report.redownloaded { line += "; downloaded the dataset again" }
        return line
    } catch {
        switch error.kind {
        case .upgradeRequired:
            return "update the app to \(error.requiredMajorVersion ?? 0).x to sync; your changes are kept"
        default:
            return error.isRetryable ? "offline, trying again later: \(error)" : "sync failed: \(error)"
        }
    }
}
// syncing-outcome:end

// syncing-status:begin
struct SyncStatus {
    var lastSyncAt: Date?
    var lastError: String?
    var datasetSchemaVersion: String?
    var pendingChanges: Int
    var refusedOutgoingChanges: [RefusedOutgoingChangeRecord]
}

func syncStatus(engine: SyncEngine, db: Database, log: ChangeLog) throws -> SyncStatus {
    let state = try engine.state()  // kept in the metadatabase, per server and dataset
    return SyncStatus(
        lastSyncAt: state.lastSyncAt, lastError: state.lastError, datasetSchemaVersion: state.datasetSchemaVersion,
        pendingChanges: try log.pendingCount(db), refusedOutgoingChanges: try log.refusedOutgoingChanges(db))
}
// syncing-status:end

// syncing-daemon:begin
/// Syncs until `stop` returns true: a live pull open while idle (or every 30 s with a server that does
/// not hold pulls), 2 s after any commit to the file (from any process), backing off with jitter
/// while the server cannot be reached.
func keepInSync(path: String, server: URL, token: String, stop: () -> Bool) throws {
    let db = try Database(path: path)
    let log = try ChangeLog.open(db, migrator: try Migrator(plan: NotesPlan.self))
    var configuration = SyncEngine.Configuration(server: server, dataset: "notes", token: token)
    configuration.retry = RetryPolicy(maximumAttempts: 1)  // the daemon backs off between whole syncs
    let engine = SyncEngine(db: db, log: log, transport: try HTTPClient(), configuration: configuration)
    let daemon = SyncDaemon(engine: engine, db: db, log: log)
    daemon.run(until: stop) { status in
        if let error = status.lastError, status.consecutiveFailures == 1 { print("sync failed: \(error)") }
    }
}
// syncing-daemon:end

/// Release 2.0.0 of the notes app: a new major, for the tests of an older major.
private enum NotesV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [NotesV1_1.NotesTable.self, Tags.self]
    enum Tags: Model {
        static let tableDefinition = TableDefinition("tags", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }
}

private enum NotesPlanV2: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = NotesPlan.schemas + [NotesV2.self]
    static let stages: [MigrationStage] =
        NotesPlan.stages + [.lightweight(fromVersion: NotesV1_1.self, toVersion: NotesV2.self)]
}

/// A device: a notes store at one release, and its engine.
private final class Device {
    let db: Database
    let log: ChangeLog
    let engine: SyncEngine

    init(
        _ path: String, plan: any MigrationPlan.Type = NotesPlan.self, release: Schema.Version? = nil,
        server: LiveServer, token: String
    )
        throws
    {
        db = try Database(path: path)
        log = try ChangeLog.open(db, migrator: try Migrator(plan: plan, releasedUpTo: release))
        engine = try makeEngine(db: db, log: log, server: server.baseURL, token: token, caFile: nil)
    }

    func rows(_ sql: SQL) throws -> [String] { try db.fetchAll(String.self, sql) }
}

@Suite struct GuideSyncingTests {
    let directory: TemporaryDirectory
    let server: LiveServer
    let token: String

    init() throws {
        directory = try TemporaryDirectory()
        server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
        token = try makeDataset(server, "notes")
    }

    @Test func theGuideShowsTheCompiledCodeVerbatim() throws {
        let problems = try DocumentedCode.differences(
            markdown: "docs/syncing-and-version-skew.md", sources: ["Tests/SyncClientTests/GuideSyncingTests.swift"])
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }

    @Test func aPooledEngineSyncsWhenAwaited() async throws {
        let (pool, engine) = try makePooledEngine(
            path: directory.path("pooled.sqlite"), server: server.baseURL, token: token)
        try await pool.write { db in try db.execute("INSERT INTO notes (id, title) VALUES ('n', 'Milk')") }
        #expect(try await engine.sync().pushed == 1)
        let other = try Device(directory.path("other.sqlite"), server: server, token: token)
        try await other.engine.sync()
        #expect(try other.rows("SELECT title FROM notes") == ["Milk"])
    }

    @Test func anOlderMinorSyncsKeepsTheNewerColumnAndFillsItInAfterUpgrading() throws {
        let older = try Device(directory.path("older.sqlite"), release: "1.0.0", server: server, token: token)
        let newer = try Device(directory.path("newer.sqlite"), server: server, token: token)
        try newer.db.execute("INSERT INTO notes (id, title, pinned) VALUES ('n', 'Milk', 1)")
        try newer.engine.sync()

        let report = try older.engine.sync()
        #expect(report.verdict == .newerSchemaAvailable)
        #expect(report.pulled == 1 && report.stashed == 1)  // `pinned`, waiting for a schema that has it
        try older.db.execute("UPDATE notes SET title = 'Oat milk' WHERE id = 'n'")
        try older.engine.sync()
        try newer.engine.sync()
        #expect(try newer.rows("SELECT title || '/' || pinned FROM notes") == ["Oat milk/1"])

        try older.db.close()
        let upgraded = try Device(directory.path("older.sqlite"), server: server, token: token)
        #expect(try upgraded.rows("SELECT title || '/' || pinned FROM notes") == ["Oat milk/1"])
        #expect(
            try syncStatus(engine: upgraded.engine, db: upgraded.db, log: upgraded.log).datasetSchemaVersion == "1.1.0")
    }

    @Test func anOlderMajorIsRefusedKeepsItsQueueAndPushesItAfterUpgrading() throws {
        let next = try Device(directory.path("next.sqlite"), plan: NotesPlanV2.self, server: server, token: token)
        try next.engine.sync()  // the dataset moves to 2.0.0
        let old = try Device(directory.path("old.sqlite"), server: server, token: token)
        try old.db.execute("INSERT INTO notes (id, title) VALUES ('n', 'Written on 1.1')")

        #expect(syncAndDescribe(old.engine) == "update the app to 2.x to sync; your changes are kept")
        let status = try syncStatus(engine: old.engine, db: old.db, log: old.log)
        #expect(status.pendingChanges == 1)
        #expect(status.lastError?.contains("upgrade the app (local changes stay queued)") == true)
        #expect(status.lastSyncAt == nil)

        try old.db.close()
        let upgraded = try Device(directory.path("old.sqlite"), plan: NotesPlanV2.self, server: server, token: token)
        #expect(try upgraded.engine.sync().pushed == 1)
        try next.engine.sync()
        #expect(try next.rows("SELECT title FROM notes") == ["Written on 1.1"])
        let after = try syncStatus(engine: upgraded.engine, db: upgraded.db, log: upgraded.log)
        #expect(after.lastError == nil && after.lastSyncAt != nil && after.pendingChanges == 0)
    }

    @Test func aChangeTheServerRefusesIsKeptAndTheRestIsPushed() throws {
        // A server that takes clocks at most 10 s ahead of its own.
        let strict = try LiveServer(
            dataDirectory: directory.url.appendingPathComponent("strict"), arguments: ["--max-clock-drift", "10"])
        let device = try Device(
            directory.path("device.sqlite"), server: strict, token: try makeDataset(strict, "notes"))
        try device.db.execute("INSERT INTO notes (id, title) VALUES ('a', 'One'), ('b', 'Two'), ('c', 'Three')")
        // A clock two minutes ahead: the device takes it for a right one (within its own 5
        // minutes), the server refuses it.
        let future = (Int64(Date().timeIntervalSince1970 * 1000) + 120_000) << 16
        try device.log.foldJournal(device.db)
        try device.db.execute(
            "UPDATE ostore_meta.ostore_changes SET clock = \(future) WHERE pk = 'b' AND columnName = ''")
        // The first pull is a snapshot of the dataset, which holds the device's own two rows.
        #expect(
            syncAndDescribe(device.engine) == "pushed 2, pulled 2, refused 1, refused here 0, waiting for an upgrade 0")
        let status = try syncStatus(engine: device.engine, db: device.db, log: device.log)
        #expect(status.refusedOutgoingChanges.map(\.code) == ["clock_out_of_range"])
        #expect(status.refusedOutgoingChanges.first?.change.contains(#""b""#) == true)
        #expect(status.pendingChanges == 0)
    }

    @Test func theDaemonPushesACommitFromAnotherConnectionAndStops() throws {
        let path = directory.path("daemon.sqlite")
        let stop = Locked(false)
        let finished = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        let (url, token) = (server.baseURL, token)
        DispatchQueue.global().async {
            do {
                try keepInSync(path: path, server: url, token: token, stop: { stop.value })
            } catch {
                failure.value = "\(error)"
            }
            finished.signal()
        }
        // Another connection (as another process would) writes once the daemon's first sync is done.
        let storage = try server.storage()
        #expect(
            eventually(timeout: .seconds(10)) {
                (try? storage.datasets().first?.schemaVersion) != nil
                    && (try? Database(path: path).fetchValue(Int.self, "SELECT count(*) FROM notes")) == 0
            })
        let writer = try Device(path, server: server, token: token)
        try writer.db.execute("INSERT INTO notes (id, title) VALUES ('d', 'From the daemon')")
        let reader = try Device(directory.path("reader.sqlite"), server: server, token: token)
        #expect(
            eventually(timeout: .seconds(15)) {
                (try? reader.engine.sync()) != nil
                    && (try? reader.rows("SELECT title FROM notes")) == ["From the daemon"]
            })
        stop.value = true
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(failure.value == nil)
    }
}
