import Foundation
import PostgresScratchCluster
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// Live pulls (Protocol/README.md, section 10.5) against a real `ostore-server`: a caught-up pull
/// that asks to wait is held until another site's change is stored, its wait passes, or the server
/// stops; the waits are bounded per address and in all.
@Suite("Live pulls")
struct LivePullTests {
    /// A pull of `peer` after `cursor` that waits up to `wait` milliseconds, as protocol version 3.
    static func livePull(_ peer: TestPeer, cursor: String?, wait: Int?, protocolVersion: Int = 3) throws
        -> RawHTTPResponse
    {
        let body = try ProtocolJSON.encode(
            PullRequest(
                protocolVersion: protocolVersion, schemaVersion: peer.schema.version, site: peer.site, cursor: cursor,
                wait: wait))
        let connection = try RawHTTPConnection(port: peer.server.port)
        try connection.sendRequest(
            "POST", "/v1/datasets/\(peer.dataset)/pull",
            headers: [("Authorization", "Bearer \(peer.token)"), ("Content-Type", "application/json")], body: body)
        return try connection.readResponse(timeout: .seconds(40))
    }

    static func page(_ response: RawHTTPResponse) throws -> PullResponse {
        guard response.status == 200 else { throw UnexpectedAnswer(status: response.status, body: response.text) }
        return try JSONDecoder().decode(PullResponse.self, from: response.body)
    }

    /// A waiting pull started on another thread, with how long its answer took.
    final class Waiting: Sendable {
        let answer = Locked<Result<(RawHTTPResponse, Duration), any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)

        init(_ peer: TestPeer, cursor: String?, wait: Int) {
            Thread { [self] in
                let started = ContinuousClock.now
                let outcome = Result { (try LivePullTests.livePull(peer, cursor: cursor, wait: wait), .now - started) }
                answer.withLock { $0 = outcome }
                done.signal()
            }.start()
        }

        var isAnswered: Bool { answer.value != nil }

        func result(timeout seconds: Double = 30) throws -> (response: RawHTTPResponse, took: Duration) {
            guard done.wait(timeout: .now() + seconds) == .success, let outcome = answer.value else {
                throw TimedOut(what: "a live pull's answer")
            }
            done.signal()
            return try outcome.get()
        }
    }

    /// Two peers of one dataset, both caught up; returns them with the reader's cursor.
    static func caughtUpPeers(_ server: LiveServer, dataset: String = "family") throws -> (
        writer: TestPeer, reader: TestPeer, cursor: String?
    ) {
        let token = try makeDataset(server, dataset)
        let writer = TestPeer(server, dataset: dataset, token: token, siteByte: 1)
        let reader = TestPeer(server, dataset: dataset, token: try makeDataset(server, dataset), siteByte: 2)
        _ = try writer.hello()
        _ = try reader.hello()
        _ = try writer.push([writer.change(.insert, "a", ["id": .text("a"), "title": .text("first")], seq: 1)])
        return (writer, reader, try reader.pullAll().cursor)
    }

    @Test(arguments: StorageBackend.allCases)
    func aWaitingPullIsAnsweredWhenAnotherSiteStoresAChange(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let (writer, reader, cursor) = try Self.caughtUpPeers(server)
        let waiting = Waiting(reader, cursor: cursor, wait: 20_000)
        // Held: nothing new yet.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(!waiting.isAnswered)
        _ = try writer.push([writer.change(.update, "a", ["title": .text("second")], seq: 2)])
        let (response, took) = try waiting.result()
        let page = try Self.page(response)
        #expect(page.changes.map(\.seq) == [2])
        #expect(page.phase == .log && !page.hasMore)
        #expect(took < .seconds(5))
        // The cursor it gave resumes after the change: nothing new, nothing repeated.
        #expect(try reader.pull(cursor: page.cursor).changes.isEmpty)
    }

    /// Caught-up sites hold the same cursor, and the page read once for all of them is the answer
    /// of those whose change it does not carry: the writer waits on, never served its own change.
    @Test(arguments: StorageBackend.allCases)
    func pullsWokenTogetherShareAPageButNeverReceiveTheirOwnChange(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let (writer, reader, cursor) = try Self.caughtUpPeers(server)
        let third = TestPeer(server, dataset: "family", token: reader.token, siteByte: 3)
        _ = try third.hello()
        let writerCursor = try writer.pullAll().cursor
        #expect(try third.pullAll().cursor == cursor && writerCursor == cursor)
        let readers = [Waiting(reader, cursor: cursor, wait: 20_000), Waiting(third, cursor: cursor, wait: 20_000)]
        let own = Waiting(writer, cursor: cursor, wait: 2_000)
        try #require(eventually { (try? server.waitingPulls()) == 3 })
        _ = try writer.push([writer.change(.update, "a", ["title": .text("second")], seq: 2)])
        let pages = try readers.map { try Self.page(try $0.result().response) }
        #expect(pages.map { $0.changes.map(\.seq) } == [[2], [2]])
        #expect(pages[0].cursor == pages[1].cursor)
        let (response, took) = try own.result()
        let page = try Self.page(response)
        #expect(page.changes.isEmpty && !page.hasMore && page.phase == .log)
        #expect(took >= .milliseconds(1_900))
        // The writer's cursor is past its change, like the readers'.
        #expect(page.cursor == pages[0].cursor)
    }

    @Test func aPullOfItsOwnChangeWaitsOnAndAWaitEndsCaughtUp() throws {
        let server = try LiveServer(backend: .sqlite)
        let (writer, _, _) = try Self.caughtUpPeers(server)
        let cursor = try writer.pullAll().cursor
        let waiting = Waiting(writer, cursor: cursor, wait: 1_500)
        Thread.sleep(forTimeInterval: 0.3)
        // The writer's own change is not in its pages: it does not end the wait.
        _ = try writer.push([writer.change(.update, "a", ["title": .text("mine")], seq: 2)])
        let (response, took) = try waiting.result()
        let page = try Self.page(response)
        #expect(page.changes.isEmpty && !page.hasMore && page.phase == .log)
        #expect(took >= .milliseconds(1_400) && took < .seconds(10))
    }

    @Test func theWaitIsCappedByTheServersMaximumAndASnapshotNeverWaits() throws {
        let server = try LiveServer(backend: .sqlite, arguments: ["--max-pull-wait", "1"])
        let (_, reader, cursor) = try Self.caughtUpPeers(server)
        #expect(try reader.hello().limits.maxPullWaitMilliseconds == 1_000)
        let started = ContinuousClock.now
        let page = try Self.page(try Self.livePull(reader, cursor: cursor, wait: 60_000))
        #expect(page.changes.isEmpty)
        #expect(ContinuousClock.now - started < .seconds(10))
        // Without a cursor the first page is a snapshot, answered at once.
        let snapshotStarted = ContinuousClock.now
        #expect(try Self.page(try Self.livePull(reader, cursor: nil, wait: 60_000)).phase == .snapshot)
        #expect(ContinuousClock.now - snapshotStarted < .milliseconds(900))
    }

    @Test func aServerThatDoesNotHoldPullsSaysSoAndAnswersAtOnce() throws {
        let server = try LiveServer(backend: .sqlite, arguments: ["--max-pull-wait", "0"])
        let (_, reader, cursor) = try Self.caughtUpPeers(server)
        #expect(try reader.hello().limits.maxPullWaitMilliseconds == 0)
        let started = ContinuousClock.now
        #expect(try Self.page(try Self.livePull(reader, cursor: cursor, wait: 20_000)).changes.isEmpty)
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test func waitNeedsProtocolVersionThreeAndIsNotNegative() throws {
        let server = try LiveServer(backend: .sqlite)
        let (_, reader, cursor) = try Self.caughtUpPeers(server)
        for (version, wait) in [(2, 1_000), (1, 0), (3, -1)] {
            let response = try Self.livePull(reader, cursor: cursor, wait: wait, protocolVersion: version)
            #expect(response.status == 400, "version \(version), wait \(wait)")
            #expect(response.text.contains("\"invalid_message\""), "\(response.text)")
        }
    }

    @Test func aSitesNewPullAnswersItsEarlierWaitingOne() throws {
        let server = try LiveServer(backend: .sqlite)
        let (_, reader, cursor) = try Self.caughtUpPeers(server)
        let first = Waiting(reader, cursor: cursor, wait: 20_000)
        Thread.sleep(forTimeInterval: 0.3)
        let second = Waiting(reader, cursor: cursor, wait: 20_000)
        let (response, took) = try first.result()
        #expect(try Self.page(response).changes.isEmpty)
        #expect(took < .seconds(5))
        #expect(!second.isAnswered)
        // A plain pull of the site answers its waiting one too.
        _ = try reader.pull(cursor: cursor)
        #expect(try second.result().took < .seconds(5))
    }

    @Test func waitingPullsAreBoundedPerAddressAndTheServerStaysResponsive() throws {
        let server = try LiveServer(backend: .sqlite, arguments: ["--max-waiting-pulls-per-ip", "2"])
        let (writer, _, _) = try Self.caughtUpPeers(server)
        var waiting: [Waiting] = []
        var peers: [TestPeer] = []
        for byte in UInt8(10)..<13 {
            let peer = TestPeer(server, dataset: "family", token: writer.token, siteByte: byte)
            _ = try peer.hello()
            peers.append(peer)
        }
        let cursors = try peers.map { try $0.pullAll().cursor }
        for index in 0..<2 {
            waiting.append(Waiting(peers[index], cursor: cursors[index], wait: 20_000))
        }
        #expect(eventually { (try? server.waitingPulls()) == 2 })
        let refused = try Self.livePull(peers[2], cursor: cursors[2], wait: 20_000)
        #expect(refused.status == 429)
        #expect(refused.text.contains("\"too_many_waiting_pulls\""))
        #expect(refused.headers["Retry-After"] != nil)
        // Pulls without waiting, pushes and health checks go on.
        #expect(try peers[2].pull(cursor: cursors[2]).changes.isEmpty)
        #expect(try server.request("GET", "/healthz").status == 200)
        _ = try writer.push([writer.change(.update, "a", ["title": .text("for both")], seq: 2)])
        for pull in waiting {
            #expect(try Self.page(try pull.result().response).changes.map(\.seq) == [2])
        }
    }

    /// A waiting pull holds the request-body memory of what it sent, not a reservation for a body
    /// that might grow: many waiting pulls leave the budget to pushes.
    @Test func waitingPullsHoldNoMoreBodyMemoryThanTheySent() throws {
        let server = try LiveServer(
            backend: .sqlite,
            arguments: [
                "--max-body-bytes", "65536", "--body-memory-budget", "1048576", "--body-memory-per-token", "1048576",
            ])
        let (writer, _, _) = try Self.caughtUpPeers(server)
        var waiting: [Waiting] = []
        for byte in UInt8(20)..<36 {
            let peer = TestPeer(server, dataset: "family", token: writer.token, siteByte: byte)
            waiting.append(Waiting(peer, cursor: try peer.pullAll().cursor, wait: 20_000))
        }
        #expect(eventually { (try? server.waitingPulls()) == 16 })
        _ = try writer.push([writer.change(.update, "a", ["title": .text("stored")], seq: 2)])
        for pull in waiting {
            #expect(try Self.page(try pull.result().response).changes.map(\.seq) == [2])
        }
    }

    @Test func sigtermAnswersEveryWaitingPullAtOnce() throws {
        let server = try LiveServer(backend: .sqlite)
        let (_, reader, cursor) = try Self.caughtUpPeers(server)
        let waiting = Waiting(reader, cursor: cursor, wait: 20_000)
        #expect(eventually { (try? server.waitingPulls()) == 1 })
        let stopped = ContinuousClock.now
        #expect(server.stop() == 0)
        #expect(ContinuousClock.now - stopped < .seconds(5))
        let (response, took) = try waiting.result()
        #expect(try Self.page(response).changes.isEmpty)
        #expect(took < .seconds(8))
    }

    /// Two servers over one database: a push through one wakes a pull waiting on the other, also
    /// when the other's notification connection was lost just before (it wakes every waiting pull
    /// when it is back).
    @Test func aPushThroughOneServerWakesAPullWaitingOnAnother() throws {
        let directory = try TemporaryDirectory()
        let url = try PostgresCluster.shared().createDatabase()
        let first = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("first")), backend: .postgres, postgresURL: url)
        let second = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("second")), backend: .postgres, postgresURL: url)
        let (writer, reader, cursor) = try Self.caughtUpPeers(first)
        let secondReader = TestPeer(second, dataset: "family", token: reader.token, siteByte: 2)
        let waiting = Waiting(secondReader, cursor: cursor, wait: 20_000)
        #expect(eventually { (try? second.waitingPulls()) == 1 })
        _ = try writer.push([writer.change(.update, "a", ["title": .text("from the first")], seq: 2)])
        let (response, took) = try waiting.result()
        #expect(try Self.page(response).changes.map(\.seq) == [2])
        #expect(took < .seconds(5))

        let again = Waiting(secondReader, cursor: try Self.page(response).cursor, wait: 20_000)
        #expect(eventually { (try? second.waitingPulls()) == 1 })
        // Both servers' listening connections dropped, and a push stored while they are down.
        try PostgresCluster.shared().execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                + "AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()", in: url)
        _ = try writer.push([writer.change(.update, "a", ["title": .text("while nobody listened")], seq: 3)])
        let (missed, tookAgain) = try again.result()
        #expect(try Self.page(missed).changes.map(\.seq) == [3])
        #expect(tookAgain < .seconds(10))
    }
}
