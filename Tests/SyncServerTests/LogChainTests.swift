import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Each log entry keeps the fingerprint of the log up to it (``LogChain``), and pull cursors carry
/// the one of the entry they stopped at, so a cursor read from a log that was since replaced (and
/// has grown past it again) is refused. The end-to-end case, a server put back from a copy by hand,
/// is `ServerRestoreTests`.
@Suite("Reference server: the log's fingerprints")
struct LogChainTests {
    private let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!

    @Test func theFingerprintDependsOnEveryEntryUpToIt() {
        let bodies = [#"{"seq":1}"#, #"{"seq":2}"#, #"{"seq":3}"#, "", "x", String(repeating: "é", count: 40)]
        var seen: Set<Int64> = []
        for body in bodies {
            for previous in [nil, 0, 1, -1, Int64.max] as [Int64?] {
                seen.insert(LogChain.next(after: previous, body: body))
            }
        }
        // Every body after every previous fingerprint gives its own (nil and 0 included).
        #expect(seen.count == bodies.count * 5)
        // The same entries in another order end at another fingerprint.
        let forward = bodies.reduce(nil as Int64?) { LogChain.next(after: $0, body: $1) }
        let backward = bodies.reversed().reduce(nil as Int64?) { LogChain.next(after: $0, body: $1) }
        #expect(forward != backward)
        // A body is not the same as its bytes split over two entries.
        #expect(
            LogChain.next(after: nil, body: "abcdefghij")
                != LogChain.next(after: LogChain.next(after: nil, body: "abcde"), body: "fghij"))
    }

    /// Pushes larger than one insert of the log holds (the SQLite storage writes 64 entries a
    /// statement, the rest one by one), and one that replays part of the previous push: every new
    /// change is stored once, in order, each with the fingerprint of the log up to it.
    @Test(arguments: StorageBackend.allCases)
    func largePushesStoreEveryEntryInOrderWithItsFingerprint(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (storage, log) = try Self.open(backend, in: directory)
        try storage.createDataset(named: "family")
        func batch(_ seqs: ClosedRange<Int64>) -> [Change] {
            seqs.map { seq in
                Change(
                    table: "notes", key: ["id": .text("n\(seq)")], op: .insert,
                    columns: ["title": .text("title \(seq), \"quoted\"")],
                    clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
            }
        }
        #expect(
            try storage.storeBatch(batch(1...150), site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
                == 150)
        #expect(
            try storage.storeBatch(batch(141...220), site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
                == 220)
        let entries = try log()
        #expect(entries.map(\.serial) == Array(1...220))
        let stored = try entries.map { try JSONDecoder().decode(Change.self, from: Data($0.body.utf8)) }
        #expect(stored == batch(1...220))
        var chain: Int64?
        for entry in entries {
            chain = LogChain.next(after: chain, body: entry.body)
            #expect(entry.chain == chain, "entry \(entry.serial)")
        }
    }

    /// Pushes of several sites at once (one group commit of several pushes on SQLite, several
    /// connections waiting for the dataset's row on PostgreSQL): every entry's fingerprint is made
    /// from the one stored before it, and the dataset keeps its newest entry's. A fingerprint read
    /// from a stale snapshot would only weaken what cursors catch, silently: so it is checked here.
    @Test(arguments: StorageBackend.allCases)
    func concurrentPushesChainEachEntryToTheOneBeforeIt(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (storage, log) = try Self.open(backend, in: directory)
        try storage.createDataset(named: "family")
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { pusher in
            let site = SiteID(bytes: Data(repeating: UInt8(0xC0 + pusher), count: 16))!
            for batch in 0..<5 {
                let changes = (1...20).map { number in
                    let seq = Int64(batch * 20 + number)
                    return Change(
                        table: "notes", key: ["id": .text("p\(pusher)-\(seq)")], op: .insert,
                        columns: ["title": .text("t")],
                        clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
                }
                do {
                    _ = try storage.storeBatch(
                        changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
                } catch {
                    failures.withLock { $0.append("pusher \(pusher), batch \(batch): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        let entries = try log()
        #expect(entries.map(\.serial) == Array(1...400))
        var previous: Int64?
        for entry in entries {
            let expected = LogChain.next(after: previous, body: entry.body)
            #expect(entry.chain == expected, "serial \(entry.serial)")
            previous = entry.chain
        }
        let state = try storage.datasetState("family", site: site)
        #expect(state.lastSerial == 400 && state.lastChain == entries.last?.chain)
    }

    /// The next cursor's fingerprint is its position's wherever a page ends: after a full page (the
    /// last entry's), after the puller's own entries left out (the log's end), on an empty page at
    /// the end, and on every page of a snapshot while pushes go on (its start's).
    @Test(arguments: StorageBackend.allCases)
    func eachCursorCarriesTheFingerprintOfItsPosition(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (storage, _) = try Self.open(backend, in: directory)
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let service = SyncService(storage: storage)
        let other = SiteID(bytes: Data(repeating: 0xB2, count: 16))!
        // The empty dataset's snapshot ends with a cursor at the log's start.
        let start = try JSONDecoder().decode(
            PullResponse.self, from: try service.pull(family: token, cursor: nil, site: other).body
        ).cursor
        func push(_ seqs: ClosedRange<Int>, from pusher: SiteID) throws {
            let changes = seqs.map { seq in
                var change = self.change("\(pusher.bytes[0])-\(seq)", seq: Int64(seq))
                change.site = pusher
                return change
            }
            _ = try storage.storeBatch(changes, site: pusher, clientSchema: SchemaVersion(1, 0), dataset: "family")
        }
        // Serials 1–10 this test's site's, 11–13 another's, 14–15 this site's again.
        try push(1...10, from: site)
        try push(1...3, from: other)
        try push(11...12, from: site)
        func page(_ cursor: String?, limit: Int) throws -> (changes: Int, cursor: PullCursor, text: String) {
            let answer = try service.pull(family: token, cursor: cursor, site: site, limit: limit)
            #expect(answer.status.rawValue == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            let response = try JSONDecoder().decode(PullResponse.self, from: answer.body)
            return (
                response.changes.count, try service.cursorKeys.open(response.cursor, dataset: "family"),
                response.cursor
            )
        }
        func mark(at serial: Int64) throws -> Int64? {
            try storage.logChain(dataset: "family", serial: serial)
        }
        // Serials 1–10 are this site's: the other site's pull of ten from the start ends at 10.
        let atTen = try service.pull(family: token, cursor: start, site: other, limit: 10)
        let tenth = try JSONDecoder().decode(PullResponse.self, from: atTen.body).cursor
        #expect(try service.cursorKeys.open(tenth, dataset: "family").serial == 10)

        // The puller's own entries are left out: a full page of the other site's three, from 10 on.
        let full = try page(tenth, limit: 3)
        #expect(try full.changes == 3 && full.cursor.serial == 13 && full.cursor.mark == mark(at: 13))
        // Then only its own entries: the page ends at the log's end.
        let ownTail = try page(full.text, limit: 3)
        #expect(try ownTail.changes == 0 && ownTail.cursor.serial == 15 && ownTail.cursor.mark == mark(at: 15))
        let atTheEnd = try page(ownTail.text, limit: 3)
        #expect(try atTheEnd.changes == 0 && atTheEnd.cursor.mark == mark(at: 15))
        // From the start as the other site: a full page ends at its last entry.
        let fromStart = try service.pull(family: token, cursor: start, site: other, limit: 4)
        let firstPage = try service.cursorKeys.open(
            try JSONDecoder().decode(PullResponse.self, from: fromStart.body).cursor, dataset: "family")
        #expect(try firstPage.serial == 4 && firstPage.mark == mark(at: 4))

        // A snapshot in pages of 4 while the other site pushes: every page's cursor carries the mark
        // of the serial the snapshot started at, and the log phase goes on from there.
        (storage as? SQLiteSyncStorage)?.waitUntilFolded()
        var snapshot = try page(nil, limit: 4)
        let startSerial = snapshot.cursor.logSerial
        #expect(startSerial == 15)
        var pages = 1
        while snapshot.cursor.snapshot != nil {
            try push(Int(3 + pages)...Int(3 + pages), from: other)
            #expect(try snapshot.cursor.mark == mark(at: startSerial))
            snapshot = try page(snapshot.text, limit: 4)
            pages += 1
        }
        #expect(pages > 2)
        #expect(try snapshot.cursor.serial == startSerial && snapshot.cursor.mark == mark(at: startSerial))
        let log = try page(snapshot.text, limit: 100)
        #expect(try log.changes == pages - 1 && log.cursor.mark == mark(at: log.cursor.logSerial))
    }

    /// A storage of `backend` in `directory`, and a function reading its log back (also used by
    /// other suites that need a storage of either kind in-process).
    static func open(_ backend: StorageBackend, in directory: TemporaryDirectory) throws -> (
        any SyncStorage, () throws -> [(serial: Int64, body: String, chain: Int64?)]
    ) {
        switch backend {
        case .sqlite:
            let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
            return (
                storage,
                {
                    try storage.pool.read { db in
                        try db.fetchAll("SELECT serial, body, chain FROM server_log ORDER BY serial").map { row in
                            (try row.decode(at: 0), try row.decode(at: 1), try row.decode(at: 2))
                        }
                    }
                }
            )
        case .postgres:
            let url = try PostgresCluster.shared().createDatabase()
            let storage = try PostgresSyncStorage(url: url, connections: 4)
            return (
                storage,
                {
                    let result = try PostgresConnection(url: url).execute(
                        PostgresStatement("log", "SELECT serial, body, chain FROM server_log ORDER BY serial", []))
                    return try (0..<result.rowCount).map { row in
                        (
                            try result.int64(row: row, column: 0), try result.string(row: row, column: 1),
                            try result.optionalInt64(row: row, column: 2)
                        )
                    }
                }
            )
        }
    }

    /// Entries the release before fingerprints stored (server schema 1.3) have none after the
    /// upgrade; the first stored after them starts a chain, and a cursor at one of them carries no
    /// mark and keeps working.
    @Test func entriesStoredBeforeFingerprintsHaveNoneAndCursorsAtThemStayValid() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        // A data directory of the release before fingerprints, with a log of three changes.
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let old = try Database(path: data.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        try Migrator(plan: ServerMigrationPlan.self, releasedUpTo: ServerSchemaV1_3.versionIdentifier).migrate(old)
        try old.execute(
            """
            INSERT INTO server_datasets (id, name, createdAt, lastSerial, incarnation, foldedSerial)
            VALUES (1, 'family', 0, 3, 'before', 3)
            """)
        try old.execute("INSERT INTO server_sites (datasetID, site, highSeq) VALUES (1, \(site.bytes), 3)")
        for seq in 1...3 {
            try old.execute(
                """
                INSERT INTO server_log (datasetID, serial, site, body)
                VALUES (1, \(Int64(seq)), \(site.bytes), \(try change("n\(seq)", seq: Int64(seq)).canonicalJSON()))
                """)
        }
        try old.close()

        let storage = try SQLiteSyncStorage(directory: data)
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        #expect(try storage.datasetState("family", site: site).lastChain == nil)
        _ = try storage.storeBatch(
            [change("n4", seq: 4)], site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
        #expect(try storage.logChain(dataset: "family", serial: 3) == nil)
        let fourth = try #require(try storage.logChain(dataset: "family", serial: 4))
        // An entry after one without a fingerprint starts a chain of its own.
        #expect(fourth == LogChain.next(after: nil, body: try #require(try storage.logBody(serial: 4))))
        let service = SyncService(storage: storage)

        // What the server issues at serial 2, an entry without a fingerprint: no mark. The cursors
        // below are signed in-process, as a pull would issue them at positions of this hand-made
        // log, for the checks behind the signature.
        let issuedBefore = PullCursor.log(2, dataset: "family", incarnation: "before", chain: nil)
        #expect(issuedBefore.mark == nil)
        let fromOld = try service.pull(family: token, cursor: try service.cursorKeys.seal(issuedBefore))
        #expect(fromOld.status.rawValue == 200)
        let answer = try JSONDecoder().decode(PullResponse.self, from: fromOld.body)
        #expect(answer.changes.map(\.seq) == [3, 4])
        let next = try service.cursorKeys.open(answer.cursor, dataset: "family")
        #expect(next.serial == 4 && next.mark == fourth)
        #expect(try service.pull(family: token, cursor: answer.cursor).status.rawValue == 200)

        // A cursor whose fingerprint the entry no longer has is refused.
        var forged = next
        forged.mark = fourth &+ 1
        let refused = try service.pull(family: token, cursor: try service.cursorKeys.seal(forged))
        #expect(refused.status.rawValue == 400)
        #expect(try JSONDecoder().decode(ErrorBody.self, from: refused.body).error.code == .invalidCursor)
        // Nor is a fingerprint given for an entry that has none.
        var unmarkable = next
        unmarkable.serial = 3
        #expect(try service.pull(family: token, cursor: try service.cursorKeys.seal(unmarkable)).status.rawValue == 400)
    }

    private func change(_ id: String, seq: Int64) -> Change {
        Change(
            table: "notes", key: ["id": .text(id)], op: .insert, columns: ["id": .text(id), "title": .text("t")],
            clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
    }

}

extension SQLiteSyncStorage {
    /// The body of the log entry at `serial` of the only dataset.
    fileprivate func logBody(serial: Int64) throws -> String? {
        try pool.read { db in try db.fetchValue(String.self, "SELECT body FROM server_log WHERE serial = \(serial)") }
    }
}
