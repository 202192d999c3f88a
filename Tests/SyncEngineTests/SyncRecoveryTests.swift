import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// A transport whose server can be swapped, as a server restored from a backup replaces the one
/// the devices talked to at the same address.
final class SwappableTransport: SyncTransport, @unchecked Sendable {
    // @unchecked Sendable: `current` is a `Locked`, and each transport it holds is Sendable.
    private let current: Locked<InProcessTransport>
    /// When set, every pull that carries a cursor is answered `400 invalid_cursor`.
    let refusesEveryCursor = Locked(false)
    let pullsWithCursor = Locked(0)

    /// When set, pull answers are passed through it on their way to the engine.
    let rewritesPulls = Locked<(@Sendable (Data) -> Data)?>(nil)

    init(_ transport: InProcessTransport) { current = Locked(transport) }

    func swap(to transport: InProcessTransport) { current.value = transport }

    var maxConcurrentRequests: Int { current.value.maxConcurrentRequests }

    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        if url.lastPathComponent == "pull",
            (try? JSONDecoder().decode(PullRequest.self, from: body))?.cursor != nil
        {
            pullsWithCursor.withLock { $0 += 1 }
            if refusesEveryCursor.value {
                let refusal = ErrorBody(.invalidCursor, "the cursor is not one this server issued")
                return TransportReply(status: 400, body: (try? ProtocolJSON.encode(refusal)) ?? Data())
            }
        }
        var reply = try current.value.post(url, headers: headers, body: body)
        if url.lastPathComponent == "pull", let rewrite = rewritesPulls.value { reply.body = rewrite(reply.body) }
        return reply
    }
}

/// Collects warnings the library and the engine log.
private struct WarningCollector: LogHandler {
    let warnings = Locked<[(String, [String: String])]>([])
    var minimumLevel: LogLevel { .warning }
    func log(level: LogLevel, _ message: String, metadata: [String: String]) {
        warnings.withLock { $0.append((message, metadata)) }
    }
}

@Suite("Sync engine: nothing lost when the server forgets or the store refuses")
struct SyncRecoveryTests {
    let directory: TemporaryDirectory
    let storage: SQLiteSyncStorage
    let transport: SwappableTransport
    let token: String

    init() throws {
        directory = try TemporaryDirectory()
        let dataset = try InProcessDataset(in: directory)
        (storage, token) = (dataset.storage, dataset.token)
        transport = SwappableTransport(dataset.transport)
    }

    /// The server the restore tests sync with: this suite's SQLite storage, or one on a new
    /// PostgreSQL database (its URL given) with a dataset and token of its own.
    private func server(_ backend: StorageBackend) throws -> (
        transport: SwappableTransport, token: String, postgresURL: String?
    ) {
        guard backend == .postgres else { return (transport, token, nil) }
        let url = try PostgresCluster.shared().createDatabase()
        let storage = try PostgresSyncStorage(url: url, connections: 2)
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        return (SwappableTransport(InProcessTransport(service: SyncService(storage: storage))), token, url)
    }

    /// A consistent copy of the server's storage as it is now: what `sqlite3 .backup` makes, or
    /// `pg_dump --format=custom` of the database at `postgresURL`.
    private func backUpServer(postgresURL: String?) throws -> String {
        let backup = directory.path("backup")
        if let postgresURL {
            try PostgresCluster.shared().dump(postgresURL, to: backup)
            return backup
        }
        let server = try Database(path: directory.path("server/server.sqlite"))
        try server.execute("VACUUM INTO \(backup)")
        try server.close()
        return backup
    }

    /// The backup put in place of new storage, as an operator restores it: `ostore-server
    /// restore`'s `SQLiteSyncStorage.restore(from:into:)`, or `pg_restore` into a new database and
    /// `renewIncarnations()`; or by hand (`renewing` false): the file copied into a data directory,
    /// or `pg_restore` alone.
    private func restoredServer(from backup: String, _ backend: StorageBackend, renewing: Bool) throws
        -> any SyncStorage
    {
        switch (backend, renewing) {
        case (.sqlite, true):
            return try SQLiteSyncStorage.restore(
                from: URL(fileURLWithPath: backup), into: URL(fileURLWithPath: directory.path("restored")))
        case (.sqlite, false):
            try FileManager.default.createDirectory(
                atPath: directory.path("copied"), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: backup, toPath: directory.path("copied/server.sqlite"))
            return try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("copied")))
        case (.postgres, _):
            let url = try PostgresCluster.shared().createDatabase()
            try PostgresCluster.shared().restore(backup, into: url)
            let storage = try PostgresSyncStorage(url: url, connections: 2)
            if renewing { try storage.renewIncarnations() }
            return storage
        }
    }

    private func lists(_ device: Device) throws -> [String] {
        try device.rows("SELECT id || ':' || name FROM remindersLists ORDER BY id")
    }

    // Regression: `invalid_cursor` failed every sync until the app called `resetPullCursors`.
    @Test func aCursorTheServerRefusesIsDroppedAndTheDatasetDownloadedAgainInTheSameSync() throws {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: token)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: token)
        for index in 0..<8 {
            try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(index)"), 'x')")
        }
        try alice.engine.sync()
        try bob.engine.sync()
        var state = try bob.engine.state()
        state.cursor = "not-a-cursor-this-server-issued"
        try bob.log.save(state, bob.db)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('N', 'new')")
        try alice.engine.sync()

        let report = try bob.engine.sync()
        #expect(report.redownloaded)
        #expect(report.pulled >= 9)
        #expect(try lists(bob) == lists(alice))
        let after = try bob.engine.state()
        #expect(after.cursor != nil && after.cursor != state.cursor && after.lastError == nil)
        // The next sync resumes from the new cursor.
        #expect(try bob.engine.sync().redownloaded == false)
    }

    @Test func aServerThatRefusesEveryCursorFailsTheSyncInsteadOfLooping() throws {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: token)
        for index in 0..<8 {
            try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(index)"), 'x')")
        }
        try alice.engine.sync()
        transport.refusesEveryCursor.value = true
        transport.pullsWithCursor.value = 0
        // The first page of the snapshot needs no cursor; the second is refused, and so was the
        // one before the download: two refusals, then the sync stops.
        let refusal = #expect(throws: SyncError.self) { try alice.engine.sync() }
        #expect(refusal?.code == .invalidCursor)
        #expect(transport.pullsWithCursor.value == 2)
    }

    /// A page whose change names a column twice is not JSON the protocol allows (section 13):
    /// the engine refuses it whole, applies none of it and keeps its cursor, where `JSONDecoder`
    /// alone took one of the two values. Likewise a page that is not valid UTF-8.
    @Test(arguments: [
        (#""name":{"text":"x"}"#, #""name":{"text":"x"},"name":{"text":"forged"}"#),
        (#""hasMore":false"#, #""hasMore":false,"hasMore":true"#),
        (#""name":{"text":"x"}"#, "\"name\":{\"text\":\"x\u{FFFD}\"}"),
    ])
    func aPageThatBreaksTheJSONRulesIsRefusedWhole(find: String, replacement: String) throws {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: token)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: token)
        try bob.engine.sync()
        for index in 0..<3 {
            try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(index)"), 'x')")
        }
        try alice.engine.sync()
        let cursor = try bob.engine.state().cursor
        transport.rewritesPulls.value = { body in
            var text = String(decoding: body, as: UTF8.self)
            if let range = text.range(of: find) { text.replaceSubrange(range, with: replacement) }
            var bytes = Data(text.utf8)
            // The replacement character stands for a byte that is not UTF-8.
            if let mark = bytes.range(of: Data("\u{FFFD}".utf8)) { bytes.replaceSubrange(mark, with: [0xFF]) }
            return bytes
        }
        let refused = #expect(throws: SyncError.self) { try bob.engine.sync() }
        #expect(refused?.kind == .invalidAnswer)
        #expect(try bob.count("remindersLists") == 0)
        #expect(try bob.engine.state().cursor == cursor)

        transport.rewritesPulls.value = nil
        #expect(try bob.engine.sync().pulled == 3)
        #expect(try lists(bob) == lists(alice))
    }

    // Regression: `stashed` was set only from a pulled page, so a sync that pulled nothing read 0
    // while the stash held changes.
    @Test func theReportCountsTheStashEvenWhenTheSyncPulledNothing() throws {
        let old = try Device(directory, "old.sqlite", release: Schema.Version(1, 0), transport: transport, token: token)
        let newer = try Device(
            directory, "new.sqlite", release: Schema.Version(1, 1), transport: transport, token: token)
        try newer.db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try newer.db.execute("INSERT INTO reminders (id, title, listID, priority) VALUES ('R', 'Milk', 'L', 2)")
        try newer.engine.sync()
        let first = try old.engine.sync()
        let waiting = try old.log.stashedCount(old.db)
        #expect(waiting > 0)
        #expect(first.stashed == waiting)
        let idle = try old.engine.sync()
        #expect(idle.pulled == 0)
        #expect(idle.stashed == waiting)
    }

    // Regression: pulled changes the store refused (a wrong type for a STRICT column) were dropped
    // without a trace.
    @Test func aPulledChangeTheStoreRefusesIsKeptCountedAndLogged() throws {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: token)
        let collector = WarningCollector()
        var configuration = Configuration()
        configuration.logHandler = collector
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: token, configuration: configuration)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try alice.engine.sync()
        try bob.engine.sync()

        // Another implementation's client writes an integer into the TEXT column of a STRICT table.
        // The server refuses it under 2.0.0, whose definition the devices' hellos gave it, and
        // under 2.0.1, which no hello described (checked by 2.0.0's); a server of a release
        // before definitions stored it, as the storage does when given it directly.
        let mallory = SiteID(bytes: Data((0..<16).map { UInt8($0 + 1) }))!
        let clock = ChangeClock(milliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)!
        let wrongType = Change(
            table: "remindersLists", key: ["id": .text("L")], op: .update, columns: ["name": .integer(5)],
            clock: clock, site: mallory, seq: 1)
        for version in [SchemaVersion(2, 0, 0), SchemaVersion(2, 0, 1)] {
            let push = PushRequest(protocolVersion: 1, schemaVersion: version, site: mallory, changes: [wrongType])
            let reply = try transport.post(
                URL(string: "http://sync.invalid/v1/datasets/family/push")!,
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: try ProtocolJSON.encode(push))
            #expect(reply.status == 400, "\(version)")
        }
        #expect(
            try storage.storeBatch([wrongType], site: mallory, clientSchema: SchemaVersion(2, 0, 1), dataset: "family")
                == 1)

        let report = try bob.engine.sync()
        #expect(report.refusedIncoming == 1)
        let refused = try bob.log.refusedIncomingChanges(bob.db)
        #expect(refused.count == 1)
        #expect(refused.first?.change.table == "remindersLists")
        #expect(refused.first?.change.columns["name"] == .integer(5))
        #expect(refused.first?.reason.contains("STRICT") == true)
        #expect(try lists(bob) == ["L:Home"])
        #expect(collector.warnings.value.contains { $0.1["table"] == "remindersLists" && $0.1["reason"] != nil })
        // Kept once: the next sync does not pull it again.
        #expect(try bob.engine.sync().refusedIncoming == 0)
        #expect(try bob.log.refusedIncomingCount(bob.db) == 1)
    }

    // Regression: a server restored from a backup kept the devices' cursors pointing past changes
    // it numbered again, and the pushes it lost after the backup never reached it again.
    @Test(arguments: StorageBackend.allCases)
    func aServerRestoredFromABackupGetsItsLostPushesAgainAndNoDeviceMissesAChange(_ backend: StorageBackend) throws {
        let (transport, token, postgresURL) = try server(backend)
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: token)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: token)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('A1', 'before'), ('A2', 'before')")
        try alice.engine.sync()
        try bob.engine.sync()
        let backup = try backUpServer(postgresURL: postgresURL)

        // After the backup: Alice pushes (acknowledged), Bob pulls it, and his cursor moves past.
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('A3', 'after'), ('A4', 'after')")
        try alice.db.execute("UPDATE remindersLists SET name = 'edited after' WHERE id = 'A1'")
        #expect(try alice.engine.sync().pushed == 3)
        try bob.engine.sync()
        #expect(try lists(bob) == lists(alice))

        let restored = try restoredServer(from: backup, backend, renewing: true)
        transport.swap(to: InProcessTransport(service: SyncService(storage: restored)))
        // Carol writes first on the restored server: her changes take the serials Bob has passed.
        let carol = try Device(directory, "carol.sqlite", transport: transport, token: token)
        try carol.engine.sync()
        try carol.db.execute("INSERT INTO remindersLists (id, name) VALUES ('C1', 'carol'), ('C2', 'carol')")
        try carol.db.execute("INSERT INTO remindersLists (id, name) VALUES ('C3', 'carol')")
        try carol.engine.sync()

        let aliceReport = try alice.engine.sync()
        #expect(aliceReport.requeued == 3)
        #expect(aliceReport.pushed == 3)
        let bobReport = try bob.engine.sync()
        #expect(bobReport.redownloaded)
        try carol.engine.sync()
        try alice.engine.sync()
        let expected = [
            "A1:edited after", "A2:before", "A3:after", "A4:after", "C1:carol", "C2:carol", "C3:carol",
        ]
        #expect(try lists(alice) == expected)
        #expect(try lists(bob) == expected)
        #expect(try lists(carol) == expected)
        // Recovered once: the next syncs move nothing.
        let idle = try alice.engine.sync()
        #expect(idle.requeued == 0 && idle.pushed == 0 && !idle.redownloaded)
    }

    // A hand restore (the file copied back or `pg_restore` alone, no `ostore-server restore`):
    // cursors past the restored log's end are refused, and the device that lost pushes notices from
    // the hello.
    @Test(arguments: StorageBackend.allCases)
    func aHandRestoredServerRefusesCursorsPastItsNewestChange(_ backend: StorageBackend) throws {
        let (transport, token, postgresURL) = try server(backend)
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: token)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: token)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('A1', 'before')")
        try alice.engine.sync()
        let backup = try backUpServer(postgresURL: postgresURL)
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('A2', 'after')")
        try alice.engine.sync()
        try bob.engine.sync()

        let copied = try restoredServer(from: backup, backend, renewing: false)
        transport.swap(to: InProcessTransport(service: SyncService(storage: copied)))
        let report = try bob.engine.sync()
        #expect(report.redownloaded)
        try alice.engine.sync()
        try bob.engine.sync()
        #expect(try lists(bob) == ["A1:before", "A2:after"])
        #expect(try lists(bob) == lists(alice))
    }
}
