import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// A push naming the batch before it (`after`) is stored only after that batch, on both storages:
/// stored first, it would raise the site's high-water mark past the earlier batch, whose changes
/// would then be skipped as already stored. Protocol/README.md, section 9.2.
@Suite("Reference server: pushes kept in order by after")
struct PushOrderTests {
    private let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!
    private let reader = SiteID(bytes: Data(repeating: 0xB2, count: 16))!

    /// A service over a storage of `backend` in `directory` with the dataset `family`, and a
    /// read-write token of it.
    private static func service(
        _ backend: StorageBackend, in directory: TemporaryDirectory, pushOrderWait: Duration
    ) throws -> (SyncService, token: String) {
        let (storage, _) = try LogChainTests.open(backend, in: directory)
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        return (SyncService(storage: storage, pushOrderWait: pushOrderWait), token)
    }

    /// A push of this test's site inserting one note per seq.
    private func pushBody(_ seqs: ClosedRange<Int64>, after: Int64? = nil, protocolVersion: Int = 2) throws -> Data {
        let changes = seqs.map { seq in
            Change(
                table: "notes", key: ["id": .text("n\(seq)")], op: .insert,
                columns: ["id": .text("n\(seq)"), "title": .text("t")],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
        }
        return try ProtocolJSON.encode(
            PushRequest(
                protocolVersion: protocolVersion, schemaVersion: SchemaVersion(1, 0), site: site, changes: changes,
                after: after))
    }

    private func push(
        _ seqs: ClosedRange<Int64>, after: Int64? = nil, to service: SyncService, token: String
    ) throws -> HTTPResponse {
        post("push", try pushBody(seqs, after: after), to: service, token: token)
    }

    /// `body` posted to the dataset's `endpoint` with the token, handled in-process.
    private func post(_ endpoint: String, _ body: Data, to service: SyncService, token: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "Content-Type", value: "application/json")
        return service.handle(
            HTTPRequest(method: "POST", path: "/v1/datasets/family/\(endpoint)", headers: headers, body: body))
    }

    /// The seqs of `site`'s changes in the log, in log order (pulled from its start by another site,
    /// with the cursor the service issues there).
    private func pulledSeqs(_ service: SyncService, token: String) throws -> [Int64] {
        let start = try service.cursorKeys.seal(
            PullCursor.log(
                0, dataset: "family", incarnation: try service.storage.datasetState("family", site: reader).incarnation,
                chain: nil))
        let answer = try service.pull(family: token, cursor: start, site: reader, limit: 1_000)
        #expect(answer.status.rawValue == 200)
        return try JSONDecoder().decode(PullResponse.self, from: answer.body).changes.map(\.seq)
    }

    /// `seqs` pushed on a thread of its own, started at once (a shared queue may start it late):
    /// its answer is there once `done` is signalled.
    private func pushOnItsOwnThread(
        _ seqs: ClosedRange<Int64>, after: Int64, to service: SyncService, token: String
    ) -> (answer: Locked<HTTPResponse?>, done: DispatchSemaphore) {
        let answer = Locked<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let selfCopy = self
        Thread {
            answer.value = try? selfCopy.push(seqs, after: after, to: service, token: token)
            done.signal()
        }.start()
        return (answer, done)
    }

    private func answer(_ response: HTTPResponse) throws -> PushResponse {
        try JSONDecoder().decode(PushResponse.self, from: response.body)
    }

    private func errorCode(_ response: HTTPResponse) -> ErrorCode? {
        (try? JSONDecoder().decode(ErrorBody.self, from: response.body))?.error.code
    }

    @Test(arguments: StorageBackend.allCases)
    func aPushArrivingBeforeTheBatchItFollowsWaitsAndIsStoredAfterIt(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(backend, in: directory, pushOrderWait: .seconds(30))
        let storage = service.storage
        let second = Locked<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        let sent = Locked(false)
        let selfCopy = self
        // A thread of its own, started at once (a shared queue may start it late, after the first).
        Thread {
            sent.value = true
            second.value = try? selfCopy.push(6...10, after: 5, to: service, token: token)
            done.signal()
        }.start()
        // Held: nothing of it is stored while the batch it follows has not come.
        #expect(done.wait(timeout: .now() + 0.5) == .timedOut)
        #expect(sent.value)
        #expect(try storage.datasetState("family", site: site).siteHighWater == 0)

        #expect(try answer(push(1...5, to: service, token: token)).acknowledgedThrough == 5)
        #expect(done.wait(timeout: .now() + 30) == .success)
        let stored = try #require(second.value)
        #expect(stored.status.rawValue == 200)
        #expect(try answer(stored).acknowledgedThrough == 10)
        #expect(try pulledSeqs(service, token: token) == Array(1...10))
    }

    @Test(arguments: StorageBackend.allCases)
    func aPushWhoseBatchBeforeNeverComesIsRefusedAndStoresNothing(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(backend, in: directory, pushOrderWait: .milliseconds(200))
        let storage = service.storage
        let started = ContinuousClock.now
        let refused = try push(6...10, after: 5, to: service, token: token)
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(refused.status.rawValue == 409 && errorCode(refused) == .previousPushMissing)
        #expect(try storage.datasetState("family", site: site).siteHighWater == 0)
        #expect(try storage.datasetState("family", site: site).lastSerial == 0)

        // Sent again once the batch before is stored: taken at once.
        #expect(try answer(push(1...5, to: service, token: token)).acknowledgedThrough == 5)
        #expect(try answer(push(6...10, after: 5, to: service, token: token)).acknowledgedThrough == 10)
        #expect(try pulledSeqs(service, token: token) == Array(1...10))
    }

    /// Over HTTP, with one libmicrohttpd polling thread: the waiting push must not hold up the
    /// thread that reads the batch it waits for (its connection is suspended while it waits, and it
    /// holds no thread). Held on the polling thread, it would wait out its time and be refused,
    /// whichever connection came first.
    @Test(arguments: StorageBackend.allCases)
    func aWaitingPushHoldsUpNoOtherConnection(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend, arguments: ["--threads", "1"])
        let token = try makeDataset(server, "family")
        let path = "/v1/datasets/family/push"
        // The empty dataset's snapshot ends with a cursor at the log's start.
        let start = try server.post(
            "pull", dataset: "family", token: token,
            PullRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: reader, cursor: nil),
            as: PullResponse.self
        ).cursor
        // The second batch goes out first and is left waiting on the server...
        let waiting = try RawHTTPConnection(port: server.port)
        try waiting.sendRequest(
            "POST", path, headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
            body: try pushBody(6...10, after: 5))
        Thread.sleep(forTimeInterval: 0.5)
        // ...while the first is read, stored and answered on the same polling thread.
        let first = try server.request("POST", path, token: token, json: try pushBody(1...5))
        #expect(first.status == 200)
        let stored = try waiting.readResponse(timeout: .seconds(30))
        #expect(stored.status == 200, "\(stored.text)")
        #expect(try JSONDecoder().decode(PushResponse.self, from: stored.body).acknowledgedThrough == 10)
        // Stored in order: the log, read from its start by another site, holds 1…10.
        let log = try server.post(
            "pull", dataset: "family", token: token,
            PullRequest(
                protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: reader, cursor: start,
                limit: 100), as: PullResponse.self)
        #expect(log.changes.map(\.seq) == Array(1...10))
    }

    /// `after` is protocol version 2: a server of version 1 would ignore it, so a push naming
    /// version 1 with it is refused, not stored in whatever order.
    @Test func afterInAPushOfVersionOneIsRefused() throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(.sqlite, in: directory, pushOrderWait: .seconds(30))
        _ = try push(1...5, to: service, token: token)
        let refused = post("push", try pushBody(6...10, after: 5, protocolVersion: 1), to: service, token: token)
        #expect(refused.status.rawValue == 400 && errorCode(refused) == .invalidMessage)
        #expect(try service.storage.datasetState("family", site: site).siteHighWater == 5)
    }

    /// `after` names a change before the batch: at or past its first seq, or negative, the push is
    /// malformed and refused at once.
    @Test func anAfterThatIsNotBeforeTheBatchIsRefused() throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(.sqlite, in: directory, pushOrderWait: .seconds(30))
        let storage = service.storage
        for after: Int64 in [6, 7, -1] {
            let refused = try push(6...10, after: after, to: service, token: token)
            #expect(refused.status.rawValue == 400 && errorCode(refused) == .invalidMessage, "after \(after)")
        }
        #expect(try storage.datasetState("family", site: site).lastSerial == 0)
    }

    /// A push replayed after both batches were stored (its answer was lost) waits for nothing and
    /// stores nothing twice.
    @Test func aReplayedPushWithAfterStoresNothingTwice() throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(.sqlite, in: directory, pushOrderWait: .seconds(30))
        _ = try push(1...5, to: service, token: token)
        _ = try push(6...10, after: 5, to: service, token: token)
        #expect(try answer(push(6...10, after: 5, to: service, token: token)).acknowledgedThrough == 10)
        #expect(try pulledSeqs(service, token: token) == Array(1...10))
    }

    /// The hello states how many pushes a client may have in flight.
    @Test func theHelloChoosesVersionTwoAndAnnouncesPushesInFlight() throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(.sqlite, in: directory, pushOrderWait: .seconds(2))
        func hello(_ versions: [Int]) throws -> HelloResponse {
            let body = try ProtocolJSON.encode(
                HelloRequest(
                    protocolVersions: versions, site: site,
                    schema: SchemaDescription(version: SchemaVersion(1, 0), fingerprint: "f", tables: [:])))
            return try JSONDecoder().decode(
                HelloResponse.self, from: post("hello", body, to: service, token: token).body)
        }
        let current = try hello([1, 2])
        #expect(current.protocolVersion == 2 && current.limits.pushesInFlight == 2)
        // A client of version 1 alone (before `after`) is served in version 1.
        #expect(try hello([1]).protocolVersion == 1)
    }

    /// A push of an app that must upgrade is told so first (Protocol/README.md, section 4: the
    /// schema version before the batch), at once: not after waiting for the batch it follows, nor
    /// as a fault of one of its changes.
    @Test(arguments: StorageBackend.allCases)
    func aPushOfAnOlderMajorIsToldToUpgradeBeforeAnythingElse(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(backend, in: directory, pushOrderWait: .seconds(30))
        _ = try service.storage.recordSchema(
            SchemaDescription(version: SchemaVersion(2, 0), fingerprint: "g", tables: [:]), dataset: "family",
            mayMoveDataset: true)
        let started = ContinuousClock.now
        let waiting = try push(6...10, after: 5, to: service, token: token)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(waiting.status.rawValue == 409 && errorCode(waiting) == .upgradeRequired)
        // A change whose seq does not grow along the batch: still the upgrade first.
        let change = Change(
            table: "notes", key: ["id": .text("n1")], op: .insert, columns: ["id": .text("n1")],
            clock: ChangeClock(milliseconds: 1_764_000_000_000, counter: 0)!, site: site, seq: 3)
        let body = try ProtocolJSON.encode(
            PushRequest(
                protocolVersion: 2, schemaVersion: SchemaVersion(1, 0), site: site, changes: [change, change],
                after: nil))
        let refused = post("push", body, to: service, token: token)
        #expect(refused.status.rawValue == 409 && errorCode(refused) == .upgradeRequired)
        #expect(try service.storage.datasetState("family", site: site).siteHighWater == 0)
    }

    /// The batch a waiting push follows is stored and answered, and its client sends the next
    /// batch before the watcher has woken the waiting push: that one no longer counts as waiting,
    /// so the next is taken, not refused as a second waiting push of the site (seen in CI under
    /// load as one batch sent twice).
    @Test func aPushWhoseBatchBeforeIsStoredNoLongerCountsAsWaiting() throws {
        let family = WaitingPushes.Site(dataset: "family", site: site)
        // A high-water mark the watcher never sees reached: only the admission's own reading counts.
        let waits = WaitingPushes(limits: .init(perSite: 1, perToken: 16, total: 64)) { _ in 0 }
        let deadline = ContinuousClock.now + .seconds(30)
        try waits.wait(family, token: "t", after: 5, highWater: 0, until: deadline) { _ in }
        // Refused while 5 is not stored...
        #expect(throws: WaitingPushes.Refusal.siteLimit) {
            try waits.wait(family, token: "t", after: 10, highWater: 0, until: deadline) { _ in }
        }
        // ...taken once it is, though the first has not been woken.
        try waits.wait(family, token: "t", after: 10, highWater: 5, until: deadline) { _ in }
        #expect(waits.waiting == 2)
    }

    /// Waits are bounded per site, per token and in all, each refused at once.
    @Test func waitingPushesAreBoundedPerSitePerTokenAndInAll() throws {
        let waits = WaitingPushes(limits: .init(perSite: 1, perToken: 3, total: 5)) { _ in 0 }
        let deadline = ContinuousClock.now + .seconds(30)
        func site(_ byte: UInt8) -> WaitingPushes.Site {
            .init(dataset: "family", site: SiteID(bytes: Data(repeating: byte, count: 16))!)
        }
        for byte: UInt8 in 1...3 {
            try waits.wait(site(byte), token: "a", after: 5, highWater: 0, until: deadline) { _ in }
        }
        #expect(throws: WaitingPushes.Refusal.tokenLimit) {
            try waits.wait(site(4), token: "a", after: 5, highWater: 0, until: deadline) { _ in }
        }
        #expect(throws: WaitingPushes.Refusal.siteLimit) {
            try waits.wait(site(1), token: "b", after: 9, highWater: 0, until: deadline) { _ in }
        }
        for byte: UInt8 in 4...5 {
            try waits.wait(site(byte), token: "b", after: 5, highWater: 0, until: deadline) { _ in }
        }
        #expect(throws: WaitingPushes.Refusal.totalLimit) {
            try waits.wait(site(6), token: "c", after: 5, highWater: 0, until: deadline) { _ in }
        }
    }

    /// A site has at most `maxPushesInFlight - 1` pushes waiting (its engine never more): one more
    /// is refused at once.
    @Test func aSecondWaitingPushOfOneSiteIsRefusedAtOnce() throws {
        let directory = try TemporaryDirectory()
        let (service, token) = try Self.service(.sqlite, in: directory, pushOrderWait: .seconds(30))
        let (first, done) = pushOnItsOwnThread(11...15, after: 10, to: service, token: token)
        // The first waits for 10 (however late its thread ran).
        #expect(eventually(timeout: .seconds(30)) { service.waitingPushes.waiting == 1 })
        let started = ContinuousClock.now
        let second = try push(6...10, after: 5, to: service, token: token)
        #expect(second.status.rawValue == 409 && errorCode(second) == .previousPushMissing)
        #expect(ContinuousClock.now - started < .seconds(5))
        _ = try push(1...5, to: service, token: token)
        _ = try push(6...10, after: 5, to: service, token: token)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(first.value?.status.rawValue == 200)
        #expect(try pulledSeqs(service, token: token) == Array(1...15))
    }
}
