import Foundation
import OfflineStore
import SyncClient
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// A transport that records every push it forwards (its `after`, the seqs it carries, the status
/// answered), can hold the batch sent alone (no `after`) back until a batch naming another has been
/// answered, as a slow network would, and can run fewer requests at once than it could.
final class RecordingTransport: SyncTransport, @unchecked Sendable {
    // @unchecked Sendable: every stored property is a `Locked`, a semaphore (safe from any thread)
    // or immutable, and `inner` is Sendable.
    struct Push: Sendable {
        var after: Int64?
        var seqs: [Int64]
        var status: Int
        var errorCode: String?
    }

    let inner: InProcessTransport
    let maxConcurrentRequests: Int
    /// Whether the first push without `after` reaches the server only once a push with one has
    /// been answered (or 30 s).
    let holdsFirstPush = Locked(false)
    private let followerAnswered = DispatchSemaphore(value: 0)
    /// Every push answered, in the order they were answered.
    let pushes = Locked<[Push]>([])
    private let heldOne = Locked(false)

    init(_ inner: InProcessTransport, maxConcurrentRequests: Int? = nil) {
        self.inner = inner
        self.maxConcurrentRequests = maxConcurrentRequests ?? inner.maxConcurrentRequests
    }

    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        guard url.lastPathComponent == "push" else { return try inner.post(url, headers: headers, body: body) }
        let request = try? ProtocolJSON.decodePush(from: body, limits: .standard)
        let holdsThis =
            request?.after == nil && holdsFirstPush.value
            && heldOne.withLock { held in
                defer { held = true }
                return !held
            }
        if holdsThis { _ = followerAnswered.wait(timeout: .now() + 30) }
        let reply = try inner.post(url, headers: headers, body: body)
        let error = try? JSONDecoder().decode(ErrorBody.self, from: reply.body)
        pushes.withLock {
            $0.append(
                Push(
                    after: request?.after, seqs: request?.changes.map(\.seq) ?? [], status: reply.status,
                    errorCode: error?.error.code.rawValue))
        }
        if request?.after != nil { followerAnswered.signal() }
        return reply
    }
}

extension Device {
    var site: SiteID { SiteID(bytes: log.identity.siteID)! }
}

/// Two pushes in flight (``SyncEngine/Configuration/pushesInFlight``): the next batch goes out while
/// the server stores the last, and the server stores it only after that one (`after`). Every way a
/// batch can fail to be taken whole leaves nothing lost and nothing stored twice.
@Suite("Sync engine: two pushes in flight")
struct PushesInFlightTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// 21 changes (a list, then reminders R0…R19), pushed in batches of 7.
    private func alice(_ transport: any SyncTransport, _ dataset: InProcessDataset) throws -> Device {
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: dataset.token)
        try alice.db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
            for index in 0..<20 {
                try db.execute("INSERT INTO reminders (id, title, listID) VALUES (\("R\(index)"), \("t\(index)"), 'L')")
            }
        }
        return alice
    }

    /// The seqs of the changes `device` has queued, oldest first.
    private func queuedSeqs(_ device: Device) throws -> [Int64] {
        try device.log.foldJournal(device.db)
        return try device.db.fetchAll(Int64.self, "SELECT seq FROM ostore_meta.ostore_changes ORDER BY seq")
    }

    /// What the server's log holds of `site`, in log order.
    private func seqsInTheLog(_ dataset: InProcessDataset, of site: SiteID) throws -> [Int64] {
        try dataset.storage.pool.read { db in
            try db.fetchAll(
                Int64.self,
                "SELECT json_extract(body, '$.seq') FROM server_log WHERE site = \(site.bytes) ORDER BY serial")
        }
    }

    @Test func eachBatchNamesTheOneBeforeItAndTheLogKeepsTheirOrder() throws {
        // A long wait: under load a batch may take seconds to store, and the one after it, refused
        // then, would be sent again.
        let dataset = try InProcessDataset(in: directory, pushOrderWait: .seconds(30))
        let transport = RecordingTransport(dataset.transport)
        let alice = try alice(transport, dataset)
        let queued = try queuedSeqs(alice)
        #expect(try alice.engine.sync().pushed == 21)
        // In the order sent (answers may come back in another).
        let pushes = transport.pushes.value.sorted { ($0.seqs.first ?? 0) < ($1.seqs.first ?? 0) }
        #expect(
            pushes.map(\.seqs) == [Array(queued[0..<7]), Array(queued[7..<14]), Array(queued[14..<21])],
            "answers: \(pushes.map { "\($0.status) \($0.errorCode ?? "")" })")
        // The first goes alone; each next one names the last change of the one before it, in
        // flight when it was sent.
        #expect(pushes.map(\.after) == [nil, queued[6], queued[13]])
        #expect(try seqsInTheLog(dataset, of: alice.site) == queued)
        #expect(try alice.log.pendingCount(alice.db) == 0)
    }

    /// A queue of more than two batches still in the journal is folded as it is pushed (the first
    /// batch goes before the rest is folded): every change reaches the server once, in order, each
    /// batch naming the one before it, and another device ends with the same rows.
    @Test func aJournalLargerThanTwoBatchesIsFoldedAsItIsPushed() throws {
        let dataset = try InProcessDataset(in: directory, pushOrderWait: .seconds(30))
        let transport = RecordingTransport(dataset.transport)
        let alice = try Device(directory, "alice.sqlite", transport: transport, token: dataset.token)
        try alice.db.transaction { db in
            for index in 0..<60 {
                try db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(index)"), 'list')")
            }
        }
        // Changes further on to rows inserted first.
        try alice.db.execute("UPDATE remindersLists SET name = 'renamed' WHERE id IN ('L0', 'L1', 'L59')")
        try alice.db.execute("DELETE FROM remindersLists WHERE id = 'L2'")
        #expect(try alice.db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_journal") == 64)

        _ = try alice.engine.sync()
        #expect(try alice.log.pendingCount(alice.db) == 0)
        #expect(try alice.db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_journal") == 0)
        let pushes = transport.pushes.value.sorted { ($0.seqs.first ?? 0) < ($1.seqs.first ?? 0) }
        #expect(pushes.allSatisfy { $0.status == 200 })
        let sent = pushes.flatMap(\.seqs)
        #expect(sent == sent.sorted() && Set(sent).count == sent.count)
        #expect(try seqsInTheLog(dataset, of: alice.site) == sent)
        for (earlier, later) in zip(pushes, pushes.dropFirst()) where later.after != nil {
            #expect(later.after == earlier.seqs.last)
        }
        let bob = try Device(directory, "bob.sqlite", transport: dataset.transport, token: dataset.token)
        _ = try bob.engine.sync()
        let lists = SQL(sql: "SELECT id || ' ' || name FROM remindersLists ORDER BY id")
        #expect(try bob.rows(lists) == alice.rows(lists))
        #expect(try bob.count("remindersLists") == 59)
        #expect(try bob.rows("SELECT name FROM remindersLists WHERE id IN ('L0', 'L59')") == ["renamed", "renamed"])
    }

    /// A server of an earlier release does not announce `maxPushesInFlight` and would ignore
    /// `after`: the engine then sends one batch at a time, without it.
    @Test func aServerThatDoesNotAnnounceItGetsOneBatchAtATime() throws {
        var limits = Limits.standard
        limits.maxPushesInFlight = nil
        let dataset = try InProcessDataset(in: directory, limits: limits)
        let transport = PipelineTransport(dataset.transport)
        let recorder = RecordingTransport(dataset.transport)
        let alice = try alice(transport, dataset)
        #expect(try alice.engine.sync().pushed == 21)
        #expect(transport.mostInFlight.value["push"] == 1)
        // The bodies carry no `after` (the same engine, recorded on a second device).
        let bob = try Device(directory, "bob.sqlite", transport: recorder, token: dataset.token)
        try bob.db.transaction { db in
            for index in 0..<15 {
                try db.execute("INSERT INTO remindersLists (id, name) VALUES (\("B\(index)"), 'x')")
            }
        }
        _ = try bob.engine.sync()
        #expect(recorder.pushes.value.count == 3 && recorder.pushes.value.allSatisfy { $0.after == nil })
    }

    /// A transport that runs one request at a time gets one batch at a time, without `after`:
    /// a second would only wait for the first to be answered, and a dropped one could hold the
    /// transport while the server waits for the batch behind it.
    @Test func aTransportOfOneRequestAtATimeGetsOneBatchAtATime() throws {
        let dataset = try InProcessDataset(in: directory)
        let transport = RecordingTransport(dataset.transport, maxConcurrentRequests: 1)
        let alice = try alice(transport, dataset)
        #expect(try alice.engine.sync().pushed == 21)
        #expect(transport.pushes.value.count == 3 && transport.pushes.value.allSatisfy { $0.after == nil })
    }

    /// A change the server refuses in the first of two batches in flight: the second follows a
    /// batch that is never stored whole, so its answer is ignored; the rest is read from the log
    /// again. Whether the refused change is the batch's first, in its middle or its last.
    @Test(arguments: [1, 4, 7])
    func aChangeRefusedInTheFirstBatchLosesNothingOfTheSecond(refusedPosition: Int) throws {
        // A server that takes clocks at most 10 s ahead of its own.
        var strict = Limits.standard
        strict.maxClockDriftMilliseconds = 10_000
        let dataset = try InProcessDataset(in: directory, limits: strict)
        let transport = RecordingTransport(dataset.transport)
        let alice = try alice(transport, dataset)
        let queued = try queuedSeqs(alice)
        // The `refusedPosition`th change queued gets a clock two minutes ahead, which the server
        // refuses (the device takes it for a right clock: it is within its own 5 minutes).
        let future = (Int64(Date().timeIntervalSince1970 * 1000) + 120_000) << 16
        let seq = try #require(
            try alice.db.fetchValue(
                Int64.self,
                "SELECT seq FROM ostore_meta.ostore_changes ORDER BY seq LIMIT 1 OFFSET \(refusedPosition - 1)"))
        try alice.db.execute("UPDATE ostore_meta.ostore_changes SET clock = \(future) WHERE seq = \(seq)")

        let report = try alice.engine.sync()
        #expect(report.refusedOutgoing == 1 && report.pushed == 20)
        #expect(try alice.log.pendingCount(alice.db) == 0)
        #expect(try alice.log.refusedOutgoingChanges(alice.db).map(\.code) == ["clock_out_of_range"])
        // Every other change stored, once: none of the second batch skipped.
        #expect(try seqsInTheLog(dataset, of: alice.site) == queued.filter { $0 != seq })
    }

    /// The first batch reaches the server after the second has given up waiting for it
    /// (`previous_push_missing`): the engine sends the second again, and the sync completes.
    @Test func aBatchThatGaveUpWaitingIsSentAgain() throws {
        let dataset = try InProcessDataset(in: directory, pushOrderWait: .milliseconds(100))
        let transport = RecordingTransport(dataset.transport)
        transport.holdsFirstPush.value = true
        let alice = try alice(transport, dataset)
        let queued = try queuedSeqs(alice)
        #expect(try alice.engine.sync().pushed == 21)
        let pushes = transport.pushes.value
        #expect(pushes.contains { $0.status == 409 && $0.errorCode == "previous_push_missing" })
        #expect(try alice.log.pendingCount(alice.db) == 0)
        #expect(try seqsInTheLog(dataset, of: alice.site) == queued)
    }
}
