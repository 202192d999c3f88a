import Foundation
import OfflineStore
import SyncClient
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// A transport that watches the engine's read-ahead: how many requests of each kind are in
/// flight at once, how far the pulls run ahead of the pages applied, and the cursor of each page
/// the server handed out. It fails one chosen request without a retry, as a connection reset
/// that outlasted the retries would.
final class PipelineTransport: SyncTransport, @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `Locked` or a semaphore (both safe from any
    // thread), and `inner` is Sendable.
    let inner: InProcessTransport
    /// The request to fail: the `number`th (from 1) to the endpoint named `name` ("push", "pull").
    let failing = Locked<(name: String, number: Int)?>(nil)
    /// The push to fail: the one whose first change has this seq. Pushes in flight together reach
    /// the transport on threads of their own, in whatever order those threads run, so they are
    /// told apart by what they carry, not by when they arrive.
    let failingPush = Locked<Int64?>(nil)
    /// Signalled when that request has failed.
    let failed = DispatchSemaphore(value: 0)
    /// Requests started, by kind.
    let started = Locked<[String: Int]>([:])
    private let inFlight = Locked<[String: Int]>([:])
    /// The most requests of each kind that were in flight at once.
    let mostInFlight = Locked<[String: Int]>([:])
    /// The cursor of every page the server answered, in order.
    let pageCursors = Locked<[String]>([])
    /// The `limit` of every pull request, in order.
    let pullLimits = Locked<[Int]>([])
    /// Pages the engine has applied, counted by the test (`afterApplyingChanges`).
    let pagesApplied = Locked(0)
    /// The most pull requests made beyond the pages applied (1: the page being applied, 2: the
    /// next one asked for meanwhile).
    let mostPullsAhead = Locked(0)

    init(_ inner: InProcessTransport) { self.inner = inner }

    var maxConcurrentRequests: Int { inner.maxConcurrentRequests }

    /// Counts from here on, and fails the `number`th request (from 1) to `name`, or the push whose
    /// first change has the seq `pushStartingAt`, from here on.
    func watch(failing name: String? = nil, number: Int = 0, pushStartingAt: Int64? = nil) {
        failingPush.value = pushStartingAt
        started.value = [:]
        mostInFlight.value = [:]
        pageCursors.value = []
        pullLimits.value = []
        pagesApplied.value = 0
        mostPullsAhead.value = 0
        failing.value = name.map { ($0, number) }
    }

    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        let name = url.lastPathComponent
        let number = started.withLock { counts in
            counts[name, default: 0] += 1
            return counts[name]!
        }
        if name == "pull" {
            let ahead = number - pagesApplied.value
            mostPullsAhead.withLock { $0 = max($0, ahead) }
            if let request = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                let limit = request["limit"] as? Int
            {
                pullLimits.withLock { $0.append(limit) }
            }
        }
        inFlight.withLock { counts in
            counts[name, default: 0] += 1
            let now = counts[name]!
            mostInFlight.withLock { $0[name] = max($0[name] ?? 0, now) }
        }
        defer { inFlight.withLock { $0[name, default: 0] -= 1 } }
        let failsThisPush =
            name == "push" && failingPush.value != nil
            && (try? ProtocolJSON.decodePush(from: body, limits: .standard))?.changes.first?.seq == failingPush.value
        if failsThisPush || (failing.value.map { $0.name == name && $0.number == number } ?? false) {
            failed.signal()
            throw SyncError(.transport, "connection reset by peer (simulated, no retry left)")
        }
        let reply = try inner.post(url, headers: headers, body: body)
        if name == "pull", reply.status == 200,
            let page = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
            let cursor = page["cursor"] as? String
        {
            pageCursors.withLock { $0.append(cursor) }
        }
        return reply
    }
}

/// Collects the messages the library and the engine log, debug ones included.
private struct DebugCollector: LogHandler {
    let messages = Locked<[String]>([])
    var minimumLevel: LogLevel { .debug }
    func log(level: LogLevel, _ message: String, metadata: [String: String]) {
        messages.withLock { $0.append(message) }
    }

    /// Waits until every pull page the engine has asked for is ready to apply or has failed, as
    /// the engine logs them.
    func waitUntilEveryPageAskedForHasEnded() {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let (asked, ended) = messages.withLock { messages in
                (
                    messages.count { $0 == "asking for a pull page" },
                    messages.count { $0 == "pull page ready" || $0 == "pull page failed" }
                )
            }
            if ended >= asked { return }
            Thread.sleep(forTimeInterval: 0.001)
        }
    }
}

@Suite("Sync engine: the read-ahead of pushes and pulls")
struct PipelineTests {
    let directory: TemporaryDirectory
    let dataset: InProcessDataset
    let transport: PipelineTransport

    init() throws {
        directory = try TemporaryDirectory()
        dataset = try InProcessDataset(in: directory)
        transport = PipelineTransport(dataset.transport)
    }

    /// A list and 20 reminders: 21 changes, 3 pushes of 7 and 5 pages of 5 (see ``Device``).
    private func aliceWithTwentyOneChanges(pushesInFlight: Int = 2) throws -> Device {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: dataset.token) {
            $0.pushesInFlight = pushesInFlight
        }
        try alice.db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
            for index in 0..<20 {
                try db.execute("INSERT INTO reminders (id, title, listID) VALUES (\("R\(index)"), \("t\(index)"), 'L')")
            }
        }
        return alice
    }

    /// Changes a device holds: its rows, and those waiting in the stash (a reminder pulled
    /// before its list).
    private func held(_ device: Device) throws -> Int {
        try device.count("remindersLists") + device.count("reminders") + device.log.stashedCount(device.db)
    }

    @Test func aPullFailingAheadWhileAPageAppliesLeavesTheCursorAtThatPage() throws {
        let alice = try aliceWithTwentyOneChanges()
        #expect(try alice.engine.sync().pushed == 21)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: dataset.token)
        // Bob's first sync: hello, then pull 1 (page 1). Pull 2 (page 2) is asked for while page 1
        // applies, and fails; the apply of page 1 waits until it has, so the failure lands inside it.
        transport.watch(failing: "pull", number: 2)
        let failedWhileApplying = Locked<Bool?>(nil)
        bob.engine.afterApplyingChanges = { [transport] _ in
            transport.pagesApplied.withLock { $0 += 1 }
            if failedWhileApplying.value == nil {
                failedWhileApplying.value = transport.failed.wait(timeout: .now() + 30) == .success
            }
        }
        #expect(throws: SyncError.self) { try bob.engine.sync() }
        #expect(failedWhileApplying.value == true)
        // Page 1 is applied and its cursor saved; nothing of page 2.
        let firstPage = try #require(transport.pageCursors.value.first)
        #expect(try bob.engine.state().cursor == firstPage)
        #expect(try bob.engine.state().lastError?.contains("connection reset") == true)
        #expect(try held(bob) == 5)

        // The next sync resumes at page 2: it pulls the other 16 changes, none twice.
        transport.watch()
        let resumed = try bob.engine.sync()
        #expect(resumed.pulled == 16)
        #expect(try held(bob) == 21)
        #expect(try bob.log.pendingCount(bob.db) == 0)
        // At most one pull at a time, never more than one page ahead of the page being applied.
        #expect(transport.mostInFlight.value["pull"] == 1)
        #expect(transport.mostPullsAhead.value <= 2)
    }

    @Test func aFailingApplyAbandonsThePageAskedForAheadAndKeepsTheCursorBeforeIt() throws {
        let alice = try aliceWithTwentyOneChanges()
        #expect(try alice.engine.sync().pushed == 21)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: dataset.token)
        struct AppFailed: Error {}
        transport.watch()
        // Page 2's apply fails (the app's own step after it, in its own transaction, throws)
        // while page 3 is being asked for.
        bob.engine.afterApplyingChanges = { [transport] _ in
            let applied = transport.pagesApplied.withLock { count in
                count += 1
                return count
            }
            if applied == 2 { throw AppFailed() }
        }
        #expect(throws: SyncError.self) { try bob.engine.sync() }
        // The page asked for ahead was collected before the sync returned: nothing in flight.
        #expect(transport.mostInFlight.value["pull"] == 1)
        let cursors = transport.pageCursors.value
        #expect(cursors.count >= 2)
        #expect(try bob.engine.state().cursor == cursors.first)
        // Page 2 was applied (its own transaction committed before the app's step failed) but its
        // cursor not saved: the next sync pulls it again, and applying it again changes nothing.
        #expect(try held(bob) == 10)
        bob.engine.afterApplyingChanges = nil
        #expect(try bob.engine.sync().pulled == 16)
        #expect(try held(bob) == 21)
        #expect(try bob.log.pendingCount(bob.db) == 0)
    }

    /// Without an app step a page and its cursor commit together. With `joining`, page 2's failure
    /// is already there when page 1 ends, so the transaction reads it (without waiting for it a
    /// second time) and commits page 1 alone.
    @Test(arguments: [false, true]) func withoutAnAppStepAPageAndItsCursorCommitTogether(joining: Bool) throws {
        let alice = try aliceWithTwentyOneChanges()
        #expect(try alice.engine.sync().pushed == 21)
        let messages = DebugCollector()
        let bob = try Device(
            directory, "bob.sqlite", transport: transport, token: dataset.token, configuration: logging(to: messages))
        if joining { try makePagesArriveWhileOneApplies(bob, loggingTo: messages) }
        // Pull 2 fails, after page 1 came and while (or after) it is applied.
        transport.watch(failing: "pull", number: 2)
        #expect(throws: SyncError.self) { try bob.engine.sync() }
        // Page 1's cursor was saved in page 1's transaction: the next sync pulls the other 16.
        let firstPage = try #require(transport.pageCursors.value.first)
        #expect(try bob.engine.state().cursor == firstPage)
        #expect(try held(bob) == 5)
        transport.watch()
        #expect(try bob.engine.sync().pulled == 16)
        #expect(try held(bob) == 21)
    }

    /// Makes each page's apply, once its cursor is saved, wait until the page asked for after it
    /// is ready (as the engine logs to `messages`, the device's log handler), so the next page is
    /// there whenever one ends. The wait is a TEMP trigger on the sync state's table (no trigger on
    /// a pulled table, which would change how pages apply).
    private func makePagesArriveWhileOneApplies(_ device: Device, loggingTo messages: DebugCollector) throws {
        try device.db.add(
            function: DatabaseFunction("wait_for_next_page", argumentCount: 0) { _ in
                messages.waitUntilEveryPageAskedForHasEnded()
                return 0
            })
        for event in ["INSERT", "UPDATE"] {
            try device.db.execute(
                sql: """
                    CREATE TEMP TRIGGER "wait_for_page_\(event)" AFTER \(event) ON ostore_meta.ostore_sync
                    BEGIN SELECT wait_for_next_page(); END
                    """)
        }
    }

    /// A store configuration whose log handler is `messages`.
    private func logging(to messages: DebugCollector) -> Configuration {
        var configuration = Configuration()
        configuration.logHandler = messages
        return configuration
    }

    /// Pages that have arrived while one applies join its transaction: fewer commits (one progress
    /// report each) than pages, and the same rows.
    @Test func pagesReceivedWhileOneAppliesJoinItsTransaction() throws {
        let alice = try aliceWithTwentyOneChanges()
        #expect(try alice.engine.sync().pushed == 21)
        func pull(into name: String, pullTransactionChanges: Int) throws -> (reports: Int, held: Int) {
            let messages = DebugCollector()
            let device = try Device(
                directory, name, transport: transport, token: dataset.token, configuration: logging(to: messages))
            try makePagesArriveWhileOneApplies(device, loggingTo: messages)
            var configuration = device.engine.configuration
            configuration.pullTransactionChanges = pullTransactionChanges
            // However slow the machine: pages join for as long as they arrive.
            configuration.pullTransactionTimeLimit = .seconds(60)
            let engine = SyncEngine(db: device.db, log: device.log, transport: transport, configuration: configuration)
            var reports = 0
            transport.watch()
            #expect(try engine.sync(progress: { _ in reports += 1 }).pulled == 21)
            #expect(try engine.state().cursor == transport.pageCursors.value.last)
            return (reports, try held(device))
        }
        let apart = try pull(into: "bob.sqlite", pullTransactionChanges: 0)
        let pages = transport.pageCursors.value.count
        #expect(pages >= 5)
        #expect(apart == (reports: pages, held: 21))
        let together = try pull(into: "carol.sqlite", pullTransactionChanges: 100)
        #expect(transport.pageCursors.value.count == pages)
        #expect(together.held == 21)
        #expect(together.reports < apart.reports)
    }

    /// A page that joined the transaction and cannot be applied whole (Bob holds one of its rows
    /// without a log entry, written while nothing was recorded): the transaction's pages are
    /// rolled back, pulled again and applied each alone, and every change arrives once.
    @Test func aJoinedPageThatCannotApplyWholeIsPulledAgainAndAppliedAlone() throws {
        let alice = try aliceWithTwentyOneChanges()
        #expect(try alice.engine.sync().pushed == 21)
        let messages = DebugCollector()
        let bob = try Device(
            directory, "bob.sqlite", transport: transport, token: dataset.token, configuration: logging(to: messages))
        // R7 comes in the fourth page (the snapshot is in key order: R0, R1, R10 … R19, R2 … R9, then
        // the list), so it joins a transaction the first page opened.
        try bob.db.execute("PRAGMA foreign_keys = OFF")
        try bob.db.withoutRecordingChanges { db in
            try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R7', 'written here', 'L')")
        }
        try bob.db.execute("PRAGMA foreign_keys = ON")
        try makePagesArriveWhileOneApplies(bob, loggingTo: messages)
        var joiningLong = bob.engine.configuration
        joiningLong.pullTransactionTimeLimit = .seconds(60)
        let engine = SyncEngine(db: bob.db, log: bob.log, transport: transport, configuration: joiningLong)
        transport.watch()
        let report = try engine.sync()
        #expect(report.pulled == 21)
        // Pulled again after the rollback: the same pages' cursors handed out twice.
        let pages = transport.pageCursors.value
        #expect(Set(pages).count < pages.count)
        #expect(messages.messages.value.contains("pages applied together were rolled back; applying each page alone"))
        #expect(messages.messages.value.contains("applying the batch again change by change"))
        #expect(try engine.state().cursor == pages.last)
        #expect(try held(bob) == 21)
        #expect(try bob.rows("SELECT title FROM reminders WHERE id = 'R7'") == ["t7"])
        #expect(try bob.log.pendingCount(bob.db) == 0)
    }

    @Test func theFirstPageIsSmallAndTheNextOnesGrowToThePageSize() throws {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: dataset.token)
        try alice.db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
            for index in 0..<3_499 {
                try db.execute("INSERT INTO reminders (id, title, listID) VALUES (\("R\(index)"), 't', 'L')")
            }
        }
        var pushing = alice.engine.configuration
        pushing.pushBatchSize = 5_000
        #expect(
            try SyncEngine(db: alice.db, log: alice.log, transport: transport, configuration: pushing).sync().pushed
                == 3_500)
        let bob = try Device(directory, "bob.sqlite", transport: transport, token: dataset.token)
        var pulling = bob.engine.configuration
        pulling.pullPageSize = 2_500
        let engine = SyncEngine(db: bob.db, log: bob.log, transport: transport, configuration: pulling)
        // While the pages apply, the connection's own checkpoints wait for a larger WAL (a thread
        // makes them); afterwards SQLite's threshold is back.
        let thresholds = Locked<[Int]>([])
        engine.afterApplyingChanges = { db in
            let threshold = try db.fetchValue(Int.self, "PRAGMA wal_autocheckpoint") ?? 0
            thresholds.withLock { $0.append(threshold) }
        }
        transport.watch()
        #expect(try engine.sync().pulled == 3_500)
        let limits = transport.pullLimits.value
        #expect(limits.prefix(3) == [SyncEngine.firstPullPageSize, 2 * SyncEngine.firstPullPageSize, 2_500])
        #expect(limits.dropFirst(3).allSatisfy { $0 == 2_500 })
        #expect(try bob.count("reminders") == 3_499)
        #expect(thresholds.value.count >= 3 && thresholds.value.allSatisfy { $0 > 1_000 })
        #expect(try bob.db.fetchValue(Int.self, "PRAGMA wal_autocheckpoint") == 1_000)
    }

    @Test(arguments: [1, 2])
    func aPushFailingWhileTheNextBatchIsOnItsWayKeepsTheOrderOfAcknowledgements(pushesInFlight: Int) throws {
        let alice = try aliceWithTwentyOneChanges(pushesInFlight: pushesInFlight)
        // Push 2 (changes 8–14) fails; batch 3 was read and encoded meanwhile (and, with two in
        // flight, sent: the server holds it for push 2, which never comes), and must not be
        // stored or marked pushed.
        try alice.log.foldJournal(alice.db)
        let eighth = try alice.db.fetchValue(
            Int64.self, "SELECT seq FROM ostore_meta.ostore_changes ORDER BY seq LIMIT 1 OFFSET 7")
        transport.watch(pushStartingAt: eighth)
        #expect(throws: SyncError.self) { try alice.engine.sync() }
        #expect(try alice.log.pendingCount(alice.db) == 14)
        #expect(try dataset.storage.datasets().first?.changes == 7)
        // Push 3 goes out only when it may be in flight beside push 2.
        #expect(transport.started.value["push"] == 1 + pushesInFlight)
        transport.watch()
        #expect(try alice.engine.sync().pushed == 14)
        #expect(try alice.log.pendingCount(alice.db) == 0)
        #expect(try dataset.storage.datasets().first?.changes == 21)
        #expect(transport.started.value["push"] == 2)
        #expect(transport.mostInFlight.value["push"]! <= pushesInFlight)
    }
}
