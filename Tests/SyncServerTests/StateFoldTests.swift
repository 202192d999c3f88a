import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// The state (`state_rows` in `state.sqlite`, each row's cells packed in it) is folded from the log after a push is
/// acknowledged.
@Suite("Reference server: the state folded after the acknowledgement")
struct StateFoldTests {
    let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!
    let schema = SchemaVersion(1, 0)

    func change(
        _ op: Change.Operation, _ id: String, _ columns: [String: WireValue] = [:], seq: Int64
    ) -> Change {
        Change(
            table: "notes", key: ["id": .text(id)], op: op, columns: columns,
            clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
    }

    /// Inserts n1…n5, then updates n1, deletes n2 and inserts n6.
    var history: [Change] {
        (1...5).map { change(.insert, "n\($0)", ["title": .text("t\($0)")], seq: Int64($0)) } + [
            change(.update, "n1", ["title": .text("edited")], seq: 6),
            change(.delete, "n2", seq: 7),
            change(.insert, "n6", ["title": .text("t6")], seq: 8),
        ]
    }

    func snapshot(_ storage: SQLiteSyncStorage) throws -> (changes: [Change], startSerial: Int64) {
        var position: SnapshotPosition?
        var changes: [Change] = []
        while true {
            let page = try storage.readSnapshot(dataset: "family", after: position, limit: 2)
            changes += page.changes
            position = page.position
            if page.isLast { return (changes, page.position.startSerial) }
        }
    }

    /// What a new client downloads: the snapshot, then the log after the snapshot's serial.
    func everything(_ storage: SQLiteSyncStorage) throws -> (snapshot: [Change], log: [Change]) {
        let (changes, startSerial) = try snapshot(storage)
        let other = SiteID(bytes: Data(repeating: 0xB2, count: 16))!
        let page = try storage.readLog(dataset: "family", after: startSerial, excluding: other, limit: 1_000)
        let log = try page.entries.map { try JSONDecoder().decode(Change.self, from: Data($0.utf8)) }
        return (changes, log)
    }

    /// Titles by row id as a client ends up with them after applying `changes` in order (the
    /// history above has one writer, so order is causal).
    func titles(_ changes: [Change]) -> [String: String] {
        var rows: [String: String] = [:]
        for change in changes {
            guard case .text(let id) = change.key["id"] else { continue }
            switch change.op {
            case .delete: rows[id] = nil
            case .insert, .update:
                if case .text(let title) = change.columns["title"] { rows[id] = title }
            }
        }
        return rows
    }

    let expected = ["n1": "edited", "n3": "t3", "n4": "t4", "n5": "t5", "n6": "t6"]

    @Test func anAcknowledgedPushLeftUnfoldedByACrashIsInTheSnapshotAfterTheRestart() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        do {
            // Stored and acknowledged, never folded: the data directory a SIGKILL right after the
            // acknowledgement leaves.
            let crashed = try SQLiteSyncStorage(directory: data, folds: false)
            try crashed.createDataset(named: "family")
            #expect(try crashed.storeBatch(history, site: site, clientSchema: schema, dataset: "family") == 8)
            let unfolded = try snapshot(crashed)
            #expect(unfolded.changes.isEmpty)
            #expect(unfolded.startSerial == 0)
        }
        let restarted = try SQLiteSyncStorage(directory: data)
        restarted.waitUntilFolded()
        let folded = try snapshot(restarted)
        #expect(folded.startSerial == 8)
        #expect(titles(folded.changes) == expected)
        // The deleted row is handed out as its tombstone.
        #expect(folded.changes.contains { $0.op == .delete && $0.key["id"] == .text("n2") })
    }

    @Test func aSnapshotTakenWhileTheFoldLagsGivesEveryChange() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        let firstPart = Array(history.prefix(4))
        do {
            let storage = try SQLiteSyncStorage(directory: data)
            try storage.createDataset(named: "family")
            _ = try storage.storeBatch(firstPart, site: site, clientSchema: schema, dataset: "family")
            storage.waitUntilFolded()
        }
        let lagging = try SQLiteSyncStorage(directory: data, folds: false)
        _ = try lagging.storeBatch(history, site: site, clientSchema: schema, dataset: "family")
        let download = try everything(lagging)
        // The state holds the first four changes; the log after its serial the other four.
        #expect(titles(download.snapshot) == ["n1": "t1", "n2": "t2", "n3": "t3", "n4": "t4"])
        #expect(download.log.map(\.seq) == [5, 6, 7, 8])
        #expect(titles(download.snapshot + download.log) == expected)
    }

    /// The OS knows the fold's thread by its name (`top -H`, `perf`): named before its start, it showed
    /// as the process's name, and a profile put the fold's work under `ostore-server`.
    @Test func theFoldThreadIsNamedForTheOS() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        // At least one: tests running beside this one may have storages (and fold threads) of their own.
        #expect(eventually { threadCount(named: "ostore-fold") >= 1 })
        withExtendedLifetime(storage) {}
    }

    @Test func pushesFromSeveralThreadsAreAllFoldedOnce() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        let sites = (1...4).map { SiteID(bytes: Data(repeating: UInt8($0), count: 16))! }
        let acknowledged = NSLock()
        nonisolated(unsafe) var highs: [Int64] = []
        DispatchQueue.concurrentPerform(iterations: sites.count) { index in
            for batch in 0..<5 {
                let changes = (1...200).map { number in
                    let seq = Int64(batch * 200 + number)
                    return Change(
                        table: "notes", key: ["id": .text("s\(index)-\(seq)")], op: .insert,
                        columns: ["title": .text("v\(seq)")],
                        clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: sites[index],
                        seq: seq)
                }
                let high = try? storage.storeBatch(changes, site: sites[index], clientSchema: schema, dataset: "family")
                acknowledged.withLock { highs.append(high ?? -1) }
            }
        }
        #expect(highs.sorted() == (0..<4).flatMap { _ in [200, 400, 600, 800, 1_000] as [Int64] }.sorted())
        storage.waitUntilFolded()
        let folded = try snapshot(storage)
        #expect(folded.startSerial == 4_000)
        #expect(Set(folded.changes.map { $0.key["id"] }).count == 4_000)
    }

    /// A data directory at server schema `version` (1.1 or 1.2) holding what `reference` holds, as
    /// that release wrote it: the state's cells one per row of `server_cells` (and at 1.1 no
    /// `foldedSerial`: that release merged each change in its push's transaction, so its state was
    /// always the whole log).
    private func oldDataDirectory(
        _ version: Schema.Version, at directory: URL, holding reference: SQLiteSyncStorage
    ) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let db = try Database(path: directory.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        defer { try? db.close() }
        try Migrator(plan: ServerMigrationPlan.self, releasedUpTo: version).migrate(db)
        #expect(try !db.columnExists("cells", in: "server_rows"))
        let folded = try db.columnExists("foldedSerial", in: "server_datasets")
        #expect(folded == (version >= ServerSchemaV1_2.versionIdentifier))
        try db.execute(sql: "ATTACH DATABASE ? AS \"reference\"", arguments: [reference.path])
        try db.execute(sql: "ATTACH DATABASE ? AS \"referenceState\"", arguments: [reference.state.path])
        try db.executeScript(
            """
            INSERT INTO server_datasets (id, name, createdAt, schemaVersion, lastSerial, incarnation)
                SELECT id, name, createdAt, schemaVersion, lastSerial, incarnation FROM reference.server_datasets;
            INSERT INTO server_sites (datasetID, site, highSeq)
                SELECT datasetID, site, highSeq FROM reference.server_sites;
            INSERT INTO server_log (datasetID, serial, site, body)
                SELECT datasetID, serial, site, body FROM reference.server_log;
            INSERT INTO server_rows
                SELECT datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite
                FROM referenceState.state_rows;
            """)
        if folded { try db.execute(sql: "UPDATE server_datasets SET foldedSerial = lastSerial") }
        let rows = try db.fetchAll(
            "SELECT datasetID, tableName, key, createdClock, createdSite, cells FROM referenceState.state_rows")
        for row in rows {
            let merged = try MergedRow(
                created: try SQLiteSyncStorage.version(row, clockAt: 3), deleted: nil,
                packedCells: try row.decode(Data?.self, at: 5))
            for (name, cell) in merged.cells {
                let value: DatabaseValue =
                    switch cell.value {
                    case .null: .null
                    case .integer(let integer): .integer(integer)
                    case .real(let real): .real(real)
                    case .text(let text): .text(text)
                    case .blob(let blob): .blob(blob)
                    }
                try db.execute(
                    """
                    INSERT INTO server_cells (datasetID, tableName, key, columnName, value, clock, site)
                    VALUES (\(try row.decode(Int64.self, at: 0)), \(try row.decode(String.self, at: 1)),
                        \(try row.decode(String.self, at: 2)), \(name), \(value), \(cell.version.clock),
                        \(cell.version.site))
                    """)
            }
        }
        try db.execute(sql: "DETACH DATABASE \"reference\"")
        try db.execute(sql: "DETACH DATABASE \"referenceState\"")
        return directory
    }

    /// The history above, a row known only from an update, and values of every storage class,
    /// some written by the row's creation and some later.
    var varied: [Change] {
        history + [
            change(.update, "n9", ["title": .text("only updated")], seq: 9),
            change(
                .insert, "n7",
                [
                    "title": .text("ünïcode ✓"), "count": .integer(.min), "big": .integer(.max), "ratio": .real(-0.5),
                    "photo": .blob(Data([0, 1, 0xFF])), "note": .null, "empty": .text(""),
                ], seq: 10),
            change(.update, "n7", ["count": .integer(42), "photo": .blob(Data())], seq: 11),
        ]
    }

    /// A storage of this release holding ``varied``, folded, and a data directory of `version`
    /// holding the same.
    func upgradeCase(_ version: Schema.Version, in directory: TemporaryDirectory) throws
        -> (reference: SQLiteSyncStorage, old: URL)
    {
        let reference = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("reference")))
        try reference.createDataset(named: "family")
        _ = try reference.storeBatch(varied, site: site, clientSchema: schema, dataset: "family")
        reference.waitUntilFolded()
        let old = try oldDataDirectory(version, at: URL(fileURLWithPath: directory.path("old")), holding: reference)
        return (reference, old)
    }

    @Test(arguments: [ServerSchemaV1_1.versionIdentifier, ServerSchemaV1_2.versionIdentifier])
    func aDataDirectoryOfAnEarlierReleaseUpgradesAndServesTheSameSnapshotAndLog(version: Schema.Version) throws {
        let directory = try TemporaryDirectory()
        let (reference, old) = try upgradeCase(version, in: directory)

        // Not folding: what it serves comes from the upgrade alone.
        let upgraded = try SQLiteSyncStorage(directory: old, folds: false)
        let served = try snapshot(upgraded)
        let expectedSnapshot = try snapshot(reference)
        #expect(served.startSerial == 11)
        #expect(served.startSerial == expectedSnapshot.startSerial)
        #expect(served.changes == expectedSnapshot.changes)
        #expect(served.changes.contains { $0.op == .update && $0.key["id"] == .text("n9") })
        #expect(titles(served.changes) == expected.merging(["n9": "only updated", "n7": "ünïcode ✓"]) { $1 })
        let other = SiteID(bytes: Data(repeating: 0xB2, count: 16))!
        #expect(
            try upgraded.readLog(dataset: "family", after: 0, excluding: other, limit: 100).entries
                == reference.readLog(dataset: "family", after: 0, excluding: other, limit: 100).entries)
        let database = try Database(path: upgraded.path)
        #expect(try database.fetchValue(Int.self, "SELECT count(*) FROM server_cells") == 0)
        try database.close()
    }

    @Test func cellsWhoseRowIsMissingAreKeptByTheUpgrade() throws {
        let directory = try TemporaryDirectory()
        let (reference, old) = try upgradeCase(ServerSchemaV1_2.versionIdentifier, in: directory)
        // n9 is known only from an update: its row holds no creation, so its cells alone carry it.
        let damaged = try Database(path: old.appendingPathComponent(SQLiteSyncStorage.fileName).path)
        try damaged.execute("DELETE FROM server_rows WHERE key LIKE \("%\"n9\"%")")
        #expect(damaged.changesCount == 1)
        try damaged.close()

        let upgraded = try SQLiteSyncStorage(directory: old, folds: false)
        let served = try snapshot(upgraded)
        #expect(served.changes == (try snapshot(reference)).changes)
        #expect(titles(served.changes)["n9"] == "only updated")
    }

    @Test func anUpgradedDataDirectoryFoldsNewChangesIntoTheRowsItPacked() throws {
        let directory = try TemporaryDirectory()
        let (reference, old) = try upgradeCase(ServerSchemaV1_2.versionIdentifier, in: directory)
        let upgraded = try SQLiteSyncStorage(directory: old)
        let more = [
            change(.update, "n3", ["title": .text("later")], seq: 12),
            change(.update, "n7", ["ratio": .real(2.5)], seq: 13),
            change(.delete, "n4", seq: 14),
        ]
        for storage in [upgraded, reference] {
            _ = try storage.storeBatch(more, site: site, clientSchema: schema, dataset: "family")
            storage.waitUntilFolded()
        }
        let served = try snapshot(upgraded)
        #expect(served.startSerial == 14)
        #expect(served.changes == (try snapshot(reference)).changes)
        #expect(titles(served.changes)["n3"] == "later")
        #expect(
            served.changes.contains {
                $0.op == .update && $0.key["id"] == .text("n7") && $0.columns["ratio"] == .real(2.5)
            })
    }

    @Test func aServerKilledBeforeItFoldedAnAcknowledgedPushServesItAfterTheRestart() throws {
        let server = try LiveServer(backend: .sqlite)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        _ = try alice.hello()
        let database = server.dataDirectory.appendingPathComponent(SQLiteSyncStorage.fileName).path
        let stateFile = server.dataDirectory.appendingPathComponent(ServerStateFile.fileName).path
        var killedUnfolded = 0
        for round in 0..<3 {
            let first = Int64(round * 100 + 1)
            let changes = (first..<(first + 100)).map { seq in
                alice.change(.insert, "n\(seq)", ["title": .text("t\(seq)")], seq: seq)
            }
            #expect(try alice.push(changes).acknowledgedThrough == first + 99)
            // Right after the acknowledgement: the folder gathers pushes for 100 ms first.
            kill(server.process.processIdentifier, SIGKILL)
            server.process.waitUntilExit()
            let lag = try run(
                "/usr/bin/sqlite3",
                [
                    stateFile,
                    "ATTACH '\(database)' AS log; SELECT d.lastSerial - coalesce(s.foldedSerial, 0) "
                        + "FROM log.server_datasets AS d LEFT JOIN state_datasets AS s ON s.datasetID = d.id",
                ])
            if Int(String(decoding: lag.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) == 100 {
                killedUnfolded += 1
            }
            try server.startAgainOnSamePort()
        }
        // Each kill is meant to come before the fold; one that came after proves nothing, but not all can.
        #expect(killedUnfolded > 0)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        let download = try bob.pullAll().changes
        #expect(Set(download.map { $0.key["id"] }).count == 300)
        #expect(download.allSatisfy { $0.op == .insert })
    }

    /// What no hand-over holds is read back from the log; what one holds is taken from it (here
    /// its changes differ from the log's, to tell which was merged); a fold's budget leaves the
    /// rest of a run for the next fold.
    @Test func aFoldTakesHandedOverRunsAndReadsTheRestFromTheLog() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")), folds: false)
        try storage.createDataset(named: "family")
        #expect(try storage.storeBatch(history, site: site, clientSchema: schema, dataset: "family") == 8)
        let inMemory = try [
            change(.update, "n1", ["title": .text("memory")], seq: 6), change(.delete, "n2", seq: 7),
            change(.insert, "n6", ["title": .text("memory6")], seq: 8),
        ].map { stored in try FoldChange(stored, key: stored.canonicalKeyJSON()) }
        let datasetID = try #require(
            try storage.pool.read { db in try db.fetchValue(Int64.self, "SELECT id FROM server_datasets") })
        var pending: StateFolder.Pending = [datasetID: [StateFolder.Run(firstSerial: 6, changes: inMemory[...])]]

        let first = try SQLiteSyncStorage.fold(&pending, log: storage.pool, state: storage.state.pool, limit: 6)
        #expect(first.serials == [datasetID: 6] && first.hasMore)
        #expect(pending[datasetID]?.map(\.firstSerial) == [7])
        let second = try SQLiteSyncStorage.fold(&pending, log: storage.pool, state: storage.state.pool, limit: 6)
        #expect(second.serials == [datasetID: 8] && !second.hasMore)
        #expect(pending.isEmpty)
        let folded = try snapshot(storage)
        #expect(folded.startSerial == 8)
        #expect(titles(folded.changes) == ["n1": "memory", "n3": "t3", "n4": "t4", "n5": "t5", "n6": "memory6"])
    }

    /// A fold inserts a row whose first change is an insert without reading it first; when the
    /// state already holds the row (brought back after a delete, or an older insert from another
    /// site arriving late), the row is read and merged, never written over.
    @Test func anInsertOfARowTheStateHoldsIsMergedWithItInALaterFold() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        _ = try storage.storeBatch(
            [
                change(.insert, "n1", ["title": .text("first")], seq: 1), change(.delete, "n1", seq: 2),
                change(.insert, "n2", ["title": .text("newer")], seq: 5),
            ], site: site, clientSchema: schema, dataset: "family")
        storage.waitUntilFolded()
        let other = SiteID(bytes: Data(repeating: 0xB2, count: 16))!
        let late = [
            // Newer than the delete: n1 comes back.
            Change(
                table: "notes", key: ["id": .text("n1")], op: .insert, columns: ["title": .text("back")],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + 3, counter: 0)!, site: other, seq: 1),
            // Older than n2's insert: its value loses.
            Change(
                table: "notes", key: ["id": .text("n2")], op: .insert, columns: ["title": .text("older")],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + 4, counter: 0)!, site: other, seq: 2),
        ]
        _ = try storage.storeBatch(late, site: other, clientSchema: schema, dataset: "family")
        storage.waitUntilFolded()
        let folded = try snapshot(storage)
        #expect(folded.startSerial == 5)
        #expect(titles(folded.changes) == ["n1": "back", "n2": "newer"])
        let n2 = folded.changes.filter { $0.key["id"] == .text("n2") }
        #expect(n2.count == 1 && n2.first?.clock.milliseconds == 1_764_000_000_000 + 5)
    }

    /// A fold inserts new rows 64 by one statement; when some of them are in the state already,
    /// those are merged with what it holds and the others inserted, as one by one.
    @Test func aStatementOfNewRowsHoldingRowsTheStateHasMergesThoseAndInsertsTheRest() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        func insert(_ number: Int, _ title: String, at milliseconds: Int64, site: SiteID, seq: Int64) -> Change {
            let id = "k" + String(repeating: "0", count: 3 - String(number).count) + String(number)
            return Change(
                table: "notes", key: ["id": .text(id)], op: .insert, columns: ["title": .text(title)],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + milliseconds, counter: 0)!, site: site, seq: seq)
        }
        let first = (0..<100).map { insert($0, "a\($0)", at: 10_000 + Int64($0), site: site, seq: Int64($0 + 1)) }
        _ = try storage.storeBatch(first, site: site, clientSchema: schema, dataset: "family")
        storage.waitUntilFolded()
        // k050…k099 are in the state: an even one's insert here is newer, an odd one's older.
        let other = SiteID(bytes: Data(repeating: 0xB2, count: 16))!
        let second = (50..<150).map { number in
            insert(
                number, "b\(number)", at: number < 100 && number % 2 == 1 ? Int64(number) : 20_000 + Int64(number),
                site: other, seq: Int64(number - 49))
        }
        _ = try storage.storeBatch(second, site: other, clientSchema: schema, dataset: "family")
        storage.waitUntilFolded()
        let folded = try snapshot(storage)
        #expect(folded.startSerial == 200)
        var expected: [String: String] = [:]
        for number in 0..<150 {
            let id = "k" + String(repeating: "0", count: 3 - String(number).count) + String(number)
            expected[id] = number < 50 || (number < 100 && number % 2 == 1) ? "a\(number)" : "b\(number)"
        }
        #expect(titles(folded.changes) == expected)
        #expect(folded.changes.count == 150)
    }

    /// The log read back is decoded as one pull page; a page the fast reader does not vouch for
    /// (here a body with an unknown member and whitespace and a real where an integer belongs) is
    /// decoded body by body by `JSONDecoder`, to the same changes.
    @Test func logBodiesReadBackDecodeAsJSONDecoderDecodesThem() throws {
        func entries(_ bodies: [String]) -> LogPage.Entries {
            var entries = LogPage.Entries()
            for body in bodies { Array(body.utf8).withUnsafeBytes { entries.append($0) } }
            return entries
        }
        let decoder = JSONDecoder()
        let canonical = try varied.map { try $0.canonicalJSON() }
        #expect(try entries(canonical).decodedChanges() == varied)
        let odd =
            #"{ "table": "notes", "key": {"id": {"text": "n1"}}, "op": "delete", "columns": {}, "#
            + #""clock": "1764000000001-0", "site": "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", "seq": 1.0, "extra": 1}"#
        let mixed = Array(canonical.prefix(3)) + [odd] + Array(canonical.suffix(2))
        let decoded = try entries(mixed).decodedChanges()
        #expect(decoded == (try mixed.map { try decoder.decode(Change.self, from: Data($0.utf8)) }))
        #expect(decoded[3].op == .delete && decoded[3].seq == 1)
        #expect(try LogPage.Entries().decodedChanges().isEmpty)
    }

    /// A fold that fails is told to the operator once per streak, and again when folds work: the
    /// state trails the log meanwhile (complete through the log), and catches up after.
    @Test func aFailingFoldIsReportedOnceAndItsRecoveryToo() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        let problems = Locked<[String?]>([])
        storage.reportFoldProblems { problem in problems.withLock { $0.append(problem) } }
        try storage.createDataset(named: "family")
        // Another program takes the state's table away: every fold fails until it is back.
        let outsider = try Database(path: storage.state.path)
        try outsider.execute(sql: "ALTER TABLE state_rows RENAME TO state_rows_away")
        #expect(try storage.storeBatch(history, site: site, clientSchema: schema, dataset: "family") == 8)
        try #require(eventually(timeout: .seconds(10)) { problems.value.count >= 1 })
        Thread.sleep(forTimeInterval: 1.2)  // two retries or more, still failing
        #expect(problems.value.count == 1)
        #expect(problems.value.first??.contains("state_rows") == true)

        try outsider.execute(sql: "ALTER TABLE state_rows_away RENAME TO state_rows")
        try #require(eventually(timeout: .seconds(10)) { problems.value.count >= 2 })
        #expect(problems.value.count == 2 && problems.value.last! == nil)
        storage.folder.waitUntilFolded()
        let (snapshot, log) = try everything(storage)
        #expect(titles(snapshot + log) == expected)
        #expect(log.isEmpty)
    }
}
