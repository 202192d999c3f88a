import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import Synchronization
import TestSupport
import Testing

/// Live sync end to end: a daemon that keeps a live pull open receives another device's change
/// in milliseconds without polling, pushes its own commits after the debounce, and rides out a
/// server restart and a proxy that resets or stalls the waiting pull without missing a change or
/// applying one twice.
@Suite("Live sync")
struct LiveSyncTests {
    /// Counts the requests a device sends, by endpoint.
    final class CountingTransport: SyncTransport {
        let inner: HTTPClient
        let sent = Mutex<[String]>([])

        init(_ inner: HTTPClient) { self.inner = inner }

        var maxConcurrentRequests: Int { inner.maxConcurrentRequests }
        var count: Int { sent.withLock { $0.count } }

        func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
            sent.withLock { $0.append(url.lastPathComponent) }
            return try inner.post(url, headers: headers, body: body)
        }

        func post(
            _ url: URL, headers: [(String, String)], body: Data,
            cancelledWhen isCancelled: @escaping @Sendable () -> Bool
        ) throws(SyncError) -> TransportReply {
            sent.withLock { $0.append(url.lastPathComponent) }
            return try inner.post(url, headers: headers, body: body, cancelledWhen: isCancelled)
        }
    }

    /// A device whose daemon runs on a thread of its own until ``stop()``, and a second connection
    /// to its store for the test to read and write.
    final class LiveDevice: @unchecked Sendable {
        // @unchecked Sendable: the daemon's store and engine are used by its thread alone; the test
        // reads `reader` on its own thread, and `counts` are atomics.
        let transport: CountingTransport
        let reader: Database
        let counts = Counts()
        private let ended = DispatchSemaphore(value: 0)

        /// What the daemon's thread reports, and the test's stop request.
        final class Counts: Sendable {
            let pulled = Atomic<Int>(0)
            let errors = Atomic<Int>(0)
            let isStopping = Atomic<Bool>(false)
        }

        var pulled: Int { counts.pulled.load(ordering: .relaxed) }
        var errors: Int { counts.errors.load(ordering: .relaxed) }

        init(
            path: String, server: URL, token: String, liveWait: Duration = .seconds(20),
            client: HTTPClient.Configuration = HTTPClient.Configuration()
        ) throws {
            transport = CountingTransport(try HTTPClient(configuration: client))
            reader = try Database(path: path)
            _ = try ChangeLog.open(reader, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            let transport = transport
            let counts = counts
            let ended = ended
            Thread {
                do {
                    let db = try Database(path: path)
                    let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
                    var engineConfiguration = SyncEngine.Configuration(server: server, dataset: "family", token: token)
                    engineConfiguration.retry.maximumAttempts = 1
                    let engine = SyncEngine(
                        db: db, log: log, transport: transport, configuration: engineConfiguration)
                    var configuration = SyncDaemon.Configuration()
                    // Far longer than the test: every sync is one a commit, a retry or a live pull made.
                    configuration.interval = 3_600
                    configuration.debounce = 0.2
                    configuration.pollInterval = 0.05
                    configuration.liveWait = liveWait
                    configuration.retry.initialDelay = 0.05
                    configuration.retry.maximumDelay = 0.3
                    SyncDaemon(engine: engine, db: db, log: log, configuration: configuration).run(
                        until: { counts.isStopping.load(ordering: .relaxed) },
                        report: { status in
                            if status.lastError == nil {
                                counts.pulled.add(status.lastReport?.pulled ?? 0, ordering: .relaxed)
                            } else {
                                counts.errors.add(1, ordering: .relaxed)
                            }
                        })
                } catch {
                    counts.errors.add(1000, ordering: .relaxed)
                }
                ended.signal()
            }.start()
        }

        func lists() -> [String] {
            (try? reader.fetchAll(String.self, "SELECT name FROM remindersLists ORDER BY name")) ?? []
        }

        /// Stops the daemon; whether it ended within `seconds`.
        func stop(within seconds: Double = 5) -> Bool {
            counts.isStopping.store(true, ordering: .relaxed)
            return ended.wait(timeout: .now() + seconds) == .success
        }
    }

    /// A device without a daemon, which syncs when the test says.
    struct Writer {
        let db: Database
        let engine: SyncEngine

        init(path: String, server: URL, token: String) throws {
            db = try Database(path: path)
            let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            var configuration = SyncEngine.Configuration(server: server, dataset: "family", token: token)
            configuration.retry.maximumAttempts = 20
            configuration.retry.maximumDelay = 0.3
            engine = SyncEngine(db: db, log: log, transport: try HTTPClient(), configuration: configuration)
        }

        func addList(_ name: String) throws {
            try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(name), \(name))")
            try engine.sync()
        }
    }

    @Test func aChangeReachesAnIdleDeviceWithoutItPolling() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "family")
        let alice = try Writer(path: directory.path("alice.sqlite"), server: server.baseURL, token: token)
        try alice.addList("Groceries")
        let bob = try LiveDevice(path: directory.path("bob.sqlite"), server: server.baseURL, token: token)
        #expect(eventually(timeout: .seconds(20)) { bob.lists() == ["Groceries"] })
        // Idle: one live pull open, no request meanwhile.
        Thread.sleep(forTimeInterval: 0.5)
        let beforeIdle = bob.transport.count
        Thread.sleep(forTimeInterval: 2)
        #expect(bob.transport.count == beforeIdle, "\(bob.transport.sent.withLock { $0 })")

        let committed = ContinuousClock.now
        try alice.addList("Hardware")
        #expect(eventually(timeout: .seconds(5)) { bob.lists() == ["Groceries", "Hardware"] })
        #expect(ContinuousClock.now - committed < .seconds(2))
        Thread.sleep(forTimeInterval: 0.3)
        // The answered pull, then the next live sync's hello and pull.
        #expect(bob.transport.count - beforeIdle <= 2, "\(bob.transport.sent.withLock { $0 })")
        #expect(bob.stop())
        #expect(bob.pulled == 2)
        #expect(bob.errors == 0)
    }

    @Test func aLocalCommitIsPushedAfterTheDebounceWhileALivePullWaits() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "family")
        let bob = try LiveDevice(path: directory.path("bob.sqlite"), server: server.baseURL, token: token)
        #expect(eventually(timeout: .seconds(10)) { (try? server.waitingPulls()) == 1 })
        let committed = ContinuousClock.now
        try bob.reader.execute("INSERT INTO remindersLists (id, name) VALUES ('Home', 'Home')")
        let storage = try server.storage()
        #expect(eventually(timeout: .seconds(10)) { (try? storage.datasets().first?.changes) == 1 })
        // The debounce, and at most a second for the wait to be given up.
        #expect(ContinuousClock.now - committed < .seconds(3))
        #expect(bob.stop())
    }

    @Test func aServerRestartWhileWaitingMissesNothingAndAppliesNothingTwice() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "family")
        let alice = try Writer(path: directory.path("alice.sqlite"), server: server.baseURL, token: token)
        try alice.addList("A")
        let bob = try LiveDevice(path: directory.path("bob.sqlite"), server: server.baseURL, token: token)
        #expect(eventually(timeout: .seconds(10)) { bob.lists() == ["A"] && (try? server.waitingPulls()) == 1 })
        #expect(server.stop() == 0)
        try server.startAgainOnSamePort()
        try alice.addList("B")
        #expect(eventually(timeout: .seconds(10)) { bob.lists() == ["A", "B"] })
        try alice.addList("C")
        #expect(eventually(timeout: .seconds(10)) { bob.lists() == ["A", "B", "C"] })
        #expect(bob.stop())
        #expect(bob.pulled == 3)
    }

    @Test(arguments: [ProxyFault.resetAfterForwarding, .stall])
    func aResetOrStalledWaitingPullMissesNothingAndAppliesNothingTwice(_ fault: ProxyFault) throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "family")
        let proxy = try FaultProxy(upstreamPort: server.port)
        let faulted = Counter()
        // The first live pull is answered by the server and then broken on its way back.
        proxy.plan = { request in
            guard request.path.hasSuffix("/pull"), String(decoding: request.body, as: UTF8.self).contains("\"wait\""),
                faulted.next() == 0
            else { return .pass }
            return fault
        }
        let alice = try Writer(path: directory.path("alice.sqlite"), server: server.baseURL, token: token)
        try alice.addList("A")
        var client = HTTPClient.Configuration()
        // A stalled answer is given up after this, as a stalled network would be.
        client.lowSpeedTime = .seconds(2)
        let bob = try LiveDevice(
            path: directory.path("bob.sqlite"), server: proxy.baseURL, token: token, liveWait: .seconds(1),
            client: client)
        #expect(eventually(timeout: .seconds(10)) { bob.lists() == ["A"] && faulted.value > 0 })
        try alice.addList("B")
        #expect(eventually(timeout: .seconds(15)) { bob.lists() == ["A", "B"] })
        try alice.addList("C")
        #expect(eventually(timeout: .seconds(15)) { bob.lists() == ["A", "B", "C"] })
        #expect(bob.stop())
        #expect(proxy.counts[fault] == 1)
        #expect(bob.pulled == 3)
    }

    /// A count shared with the proxy's threads.
    final class Counter: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .relaxed) }
        /// The count before this call.
        func next() -> Int { count.add(1, ordering: .relaxed).oldValue }
    }

    @Test func theEngineSaysWhenAServerDoesNotHoldPullsAndGivesAWaitUpWhenAsked() throws {
        let directory = try TemporaryDirectory()
        let polling = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("polling")), arguments: ["--max-pull-wait", "0"])
        let token = try makeDataset(polling, "family")
        let device = try Writer(path: directory.path("device.sqlite"), server: polling.baseURL, token: token)
        let started = ContinuousClock.now
        let report = try device.engine.sync(waitingForChanges: LiveWait(timeout: .seconds(20)))
        #expect(report.liveWait == .notOffered && !report.livePullsOffered)
        #expect(ContinuousClock.now - started < .seconds(5))

        let live = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("live")))
        let liveToken = try makeDataset(live, "family")
        let other = try Writer(path: directory.path("other.sqlite"), server: live.baseURL, token: liveToken)
        // A first download (a snapshot) is answered at once; only a caught-up pull waits.
        #expect(try other.engine.sync(waitingForChanges: LiveWait(timeout: .seconds(20))).liveWait == .answered)
        let giveUpAt = ContinuousClock.now + .milliseconds(500)
        let stopped = try other.engine.sync(
            waitingForChanges: LiveWait(timeout: .seconds(20)) { ContinuousClock.now >= giveUpAt })
        #expect(stopped.liveWait == .stopped && stopped.livePullsOffered)
        #expect(ContinuousClock.now - giveUpAt < .seconds(3))
    }
}
