import CReferenceBench
import Foundation
import OfflineStore

/// The change log's costs on `rows` todos: inserts, one-column updates and deletes with tracking
/// on, against the same statements untracked in C (and untracked through our own Database layer,
/// for context); the metadatabase's size beside the data after the inserts; the time and peak
/// memory of reading a queue of `pendingRows` changes; and the metadatabase of a device after
/// 1,000,000 acknowledged updates against after 1,000.
struct ChangeLogWorkloads {
    let options: BenchmarkOptions
    let rows: Int
    /// The size of the queue the read workloads drain: five times `rows` (1,000,000 by default).
    let pendingRows: Int

    /// Tracked inserts and updates may cost at most this many times C without tracking.
    static let trackedWriteTarget = 2.0
    /// The metadatabase may be at most this many times the size of the data it tracks.
    static let metadatabaseSizeTarget = 1.0
    /// Reading the whole queue may raise the process's peak resident memory by less than this.
    static let readMemoryTarget = 64 * 1_048_576

    init(options: BenchmarkOptions) {
        self.options = options
        rows = options.rows ?? 200_000
        pendingRows = rows * 5
    }

    /// What every workload shares: where its files go, the plan, and the keys and titles, made
    /// before any clock starts so both sides bind the same strings.
    private struct Setting {
        let stores: ChangeLogStores
        let migrator: Migrator
        /// `CREATE TABLE todos …` as the migrator wrote it, for the files without a change log.
        let tableSQL: String
        let ids: [String]
        let titles: [String]
        let referenceIDs: CStringArray
        let referenceTitles: CStringArray
    }

    /// What a file holds after a workload: rows left, rows whose `updatedAt` was updated, and
    /// (with the change log) pending changes.
    private struct Expected {
        var rows: Int
        var updated: Int
        var pending: Int
    }

    func run() throws -> [ChangeLogResult] {
        let stores = try ChangeLogStores()
        defer { stores.removeAll() }
        let migrator = try Migrator(plan: ChangeLogBenchPlan.self)
        let ids = (0..<rows).map { _ in UUID().uuidString }
        let titles = (0..<rows).map { "Todo #\($0)" }
        let setting = Setting(
            stores: stores, migrator: migrator, tableSQL: try tableSQL(stores: stores, migrator: migrator), ids: ids,
            titles: titles, referenceIDs: CStringArray(ids), referenceTitles: CStringArray(titles))

        let insertName = "insert, tracked"
        let insertEachName = "insert, tracked, a transaction per row"
        let foldName = "  fold the inserts' journal into the keyed log"
        let updateName = "update one column by key, tracked"
        let deleteName = "delete by key, tracked"
        let sizeName = "metadatabase size after the inserts"
        let foldedSizeName = "metadatabase size after the inserts and their fold"
        let readNames = ReadNames()
        var results: [ChangeLogResult] = []

        if options.includes(insertName) {
            results += try compare(
                insertName, target: Self.trackedWriteTarget, from: (nil, nil), setting,
                expecting: Expected(rows: rows, updated: 0, pending: rows),
                ours: { db in try insertTodos(db, setting) },
                reference: { reference in
                    ref_insert_todos(
                        reference, Int64(rows), setting.referenceIDs.pointers, setting.referenceTitles.pointers)
                })
        }

        // One row per transaction: what a transaction costs besides its rows (the clock catches up
        // with the files at each one's first tracked row), on a twentieth of the rows.
        if options.includes(insertEachName) {
            let count = max(1, rows / 20)
            results += try compare(
                insertEachName, target: nil, from: (nil, nil), setting,
                expecting: Expected(rows: count, updated: 0, pending: count), rows: count, transactionPerRow: true,
                ours: { db in try insertTodos(db, setting, count: count, transactionPerRow: true) },
                reference: { reference in
                    ref_insert_todos_each_committed(
                        reference, Int64(count), setting.referenceIDs.pointers, setting.referenceTitles.pointers)
                })
        }

        // The input of the fold, updates and deletes: the store after `rows` tracked inserts (with
        // its journal as the inserts left it, and folded), and a file without a change log holding
        // the same rows.
        let needsInserted = [foldName, updateName, deleteName, sizeName, foldedSizeName].contains(
            where: options.includes)
        let inserted = needsInserted ? try insertedStores(setting) : nil

        if options.includes(foldName), let inserted {
            results.append(try foldJournal(foldName, from: inserted, setting))
        }

        if options.includes(updateName), let inserted {
            results += try compare(
                updateName, target: Self.trackedWriteTarget, from: (inserted.tracked, inserted.plain), setting,
                expecting: Expected(rows: rows, updated: rows, pending: 2 * rows),
                ours: { db in
                    let update = try db.cachedStatement("UPDATE todos SET updatedAt = ? WHERE id = ?")
                    for index in 0..<rows { try update.execute(1.8e9 + Double(index), ids[index]) }
                },
                reference: { reference in ref_update_todos(reference, Int64(rows), setting.referenceIDs.pointers) })
        }
        if options.includes(deleteName), let inserted {
            // Each deleted row's insert stays in the log beside its delete; a push sends the delete alone.
            results += try compare(
                deleteName, target: nil, from: (inserted.tracked, inserted.plain), setting,
                expecting: Expected(rows: 0, updated: 0, pending: 2 * rows),
                ours: { db in
                    let delete = try db.cachedStatement("DELETE FROM todos WHERE id = ?")
                    for index in 0..<rows { try delete.execute(ids[index]) }
                },
                reference: { reference in ref_delete_todos(reference, Int64(rows), setting.referenceIDs.pointers) })
        }
        // The journal's pages, free after a fold, stay in the file for the next changes to reuse.
        for (name, store) in [(sizeName, inserted?.journal), (foldedSizeName, inserted?.tracked)]
        where options.includes(name) {
            guard let store else { continue }
            let metaBytes = try stores.size(of: Metadatabase.path(forDatabaseAt: store))
            let dataBytes = try stores.size(of: store)
            results.append(
                ChangeLogResult(
                    workload: name, rows: rows, ours: .bytes(metaBytes), baselineName: "main database",
                    baseline: .bytes(dataBytes), target: String(format: "≤ %.1fx", Self.metadatabaseSizeTarget),
                    met: Double(metaBytes) <= Self.metadatabaseSizeTarget * Double(dataBytes)))
        }
        if [readNames.read, readNames.memory, readNames.count].contains(where: options.includes) {
            results += try readPending(readNames, setting)
        }
        let churnName = "metadatabase after 1,000,000 acknowledged updates"
        if options.includes(churnName) { results.append(try acknowledgedChurn(churnName, setting)) }
        return results
    }

    /// How many rows the acknowledged churn updates, and how many updates it makes of them.
    static let churnRows = 1_000
    static let churnUpdates = 1_000_000

    /// A device whose 1,000 rows are updated over and over, each 1,000 updates folded and
    /// acknowledged as a sync acknowledges them: its metadatabase after 1,000,000 updates against
    /// after the first 1,000 (target ≤ 1.0x: the keyed log keeps one entry per row and column, and
    /// the journal's pages, free after each fold, are used again). Each size is the file's once
    /// the connection closed (its WAL copied in).
    private func acknowledgedChurn(_ name: String, _ setting: Setting) throws -> ChangeLogResult {
        let path = setting.stores.path("churn.sqlite")
        let rows = min(Self.churnRows, setting.ids.count)
        var updates = 0
        func updateAndAcknowledge(until total: Int) throws {
            let db = try Database(path: path)
            let log = try ChangeLog.open(db, migrator: setting.migrator)
            let update = try db.cachedStatement("UPDATE todos SET updatedAt = ? WHERE id = ?")
            while updates < total {
                try db.transaction(.immediate) { db in
                    for index in 0..<rows {
                        try update.execute(1.8e9 + Double(updates + index), setting.ids[index])
                    }
                }
                updates += rows
                _ = try log.foldJournal(db)
                let newest = try db.fetchValue(Int64.self, "SELECT max(seq) FROM ostore_meta.ostore_changes") ?? 0
                try log.markPushed(db, upTo: newest)
            }
            try db.close()
        }
        do {
            let db = try Database(path: path)
            _ = try ChangeLog.open(db, migrator: setting.migrator)
            try db.transaction(.immediate) { db in try insertTodos(db, setting, count: rows) }
            try db.close()
        }
        try updateAndAcknowledge(until: rows)
        let afterThousand = try setting.stores.size(of: Metadatabase.path(forDatabaseAt: path))
        try updateAndAcknowledge(until: Self.churnUpdates)
        let afterMillion = try setting.stores.size(of: Metadatabase.path(forDatabaseAt: path))
        return ChangeLogResult(
            workload: name, rows: rows, ours: .bytes(afterMillion), baselineName: "after the first 1,000",
            baseline: .bytes(afterThousand), target: "≤ 1.0x", met: afterMillion <= afterThousand)
    }

    /// The prepared insert both sides run: row `i` is (ids[i], titles[i], i % 2, 1.7e9 + i), for
    /// the first `count` rows (all of them by default), each in a transaction of its own with
    /// `transactionPerRow`.
    private func insertTodos(_ db: Database, _ setting: Setting, count: Int? = nil, transactionPerRow: Bool = false)
        throws
    {
        let insert = try db.cachedStatement("INSERT INTO todos (id, title, done, updatedAt) VALUES (?, ?, ?, ?)")
        for index in 0..<(count ?? rows) {
            let row = {
                try insert.execute(setting.ids[index], setting.titles[index], index % 2 == 1, 1.7e9 + Double(index))
            }
            if transactionPerRow { try db.transaction(.immediate) { _ in try row() } } else { try row() }
        }
    }

    /// The todos table's declaration as our migrator writes it, so the files without a change
    /// log hold a table of exactly the same shape.
    private func tableSQL(stores: ChangeLogStores, migrator: Migrator) throws -> String {
        let db = try Database(path: stores.replace("schema.sqlite", with: nil))
        _ = try ChangeLog.open(db, migrator: migrator)
        defer { try? db.close() }
        guard
            let sql = try db.fetchValue(
                String.self, "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'todos'")
        else { throw BenchmarkFailure(description: "the bench plan made no todos table") }
        return sql
    }

    /// The store after `rows` tracked inserts, as they leave it (`journal`: the changes in the
    /// journal) and folded (`tracked`), each checkpointed so its two files are the whole store, and
    /// a file without a change log holding the same rows, written by the C reference.
    private func insertedStores(_ setting: Setting) throws -> (journal: String, tracked: String, plain: String) {
        let journal = try setting.stores.replace("inserted-journal.sqlite", with: nil)
        do {
            let db = try Database(path: journal)
            _ = try ChangeLog.open(db, migrator: setting.migrator)
            try db.transaction(.immediate) { db in try insertTodos(db, setting) }
            try ChangeLogStores.finish(db)
        }
        let tracked = try setting.stores.replace("inserted-tracked.sqlite", with: journal)
        do {
            let db = try Database(path: tracked)
            let log = try ChangeLog.open(db, migrator: setting.migrator)
            guard try log.foldJournal(db) == rows else {
                throw BenchmarkFailure(description: "the fold of the inserts' journal did not move \(rows) entries")
            }
            try ChangeLogStores.finish(db)
        }
        for store in [journal, tracked] {
            for wal in [store + "-wal", Metadatabase.path(forDatabaseAt: store) + "-wal"]
            where FileManager.default.fileExists(atPath: wal) {
                guard try setting.stores.size(of: wal) == 0 else {
                    throw BenchmarkFailure(description: "\(wal) was not checkpointed: the sizes would be wrong")
                }
            }
        }

        let plain = try setting.stores.replace("inserted-plain.sqlite", with: nil)
        var reference: OpaquePointer?
        try check(openReferenceDatabase(plain, &reference))
        defer { ref_close(reference) }
        try check(ref_exec(reference, setting.tableSQL))
        try check(
            ref_insert_todos(
                reference, Int64(rows), setting.referenceIDs.pointers, setting.referenceTitles.pointers))
        try check(ref_exec(reference, "PRAGMA wal_checkpoint(TRUNCATE)"))
        return (journal, tracked, plain)
    }

    /// A fresh copy of the store `source` (nil: a new one) under `name`, opened with its change log.
    private func openStore(_ name: String, copying source: String?, _ setting: Setting) throws -> (
        Database?, ChangeLog?
    ) {
        let db = try Database(path: setting.stores.replace(name, with: source))
        return (db, try ChangeLog.open(db, migrator: setting.migrator))
    }

    /// The work the triggers leave to the fold, timed where it happens: one fold of the
    /// journal `rows` tracked inserts left (opening the store outside the clock, which does not
    /// fold), against the C inserts of the same rows without tracking, taking turns.
    private func foldJournal(
        _ name: String, from inserted: (journal: String, tracked: String, plain: String), _ setting: Setting
    ) throws -> ChangeLogResult {
        var db: Database?
        var log: ChangeLog?
        var referenceDB: OpaquePointer?
        let fold = TimedSide(
            setUp: { (db, log) = try openStore("fold.sqlite", copying: inserted.journal, setting) },
            body: {
                guard try log!.foldJournal(db!) == rows else {
                    throw BenchmarkFailure(description: "\(name): the fold did not move \(rows) entries")
                }
            },
            tearDown: {
                let keyed = try db!.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_changes")
                try db!.close()
                db = nil
                log = nil
                guard keyed == rows else {
                    throw BenchmarkFailure(description: "\(name): the keyed log holds \(keyed ?? -1), not \(rows)")
                }
            })
        let insertsInC = TimedSide(
            setUp: {
                try check(openReferenceDatabase(setting.stores.replace("reference.sqlite", with: nil), &referenceDB))
                try check(ref_exec(referenceDB, setting.tableSQL))
            },
            body: {
                try check(
                    ref_insert_todos(
                        referenceDB, Int64(rows), setting.referenceIDs.pointers, setting.referenceTitles.pointers))
            },
            tearDown: {
                ref_close(referenceDB)
                referenceDB = nil
            })
        let timings = try sampleAlternating(runs: options.runs, [fold, insertsInC])
        return ChangeLogResult(
            workload: name, rows: rows, ours: .time(timings[0]), baselineName: "C inserts, untracked",
            baseline: .time(timings[1]), target: "—", met: nil)
    }

    /// One workload on three sides, in turn: ours with the change log open, ours without it, and
    /// C without it, each run from a fresh copy of `sources` (nil: an empty table) in one
    /// transaction. Opening (and the change log's attach, migrate and trigger install) and closing
    /// are outside the clock; every run's result is checked against `expected` afterwards.
    private func compare(
        _ name: String, target: Double?, from sources: (tracked: String?, plain: String?), _ setting: Setting,
        expecting expected: Expected, rows: Int? = nil, transactionPerRow: Bool = false,
        ours: @escaping (Database) throws -> Void, reference: @escaping (OpaquePointer?) -> Int32
    ) throws -> [ChangeLogResult] {
        let rows = rows ?? self.rows
        // Each side runs `ours` in one transaction, or lets it commit row by row.
        let body: (Database) throws -> Void = { db in
            if transactionPerRow { try ours(db) } else { try db.transaction(.immediate) { db in try ours(db) } }
        }
        var db: Database?
        var log: ChangeLog?
        var referenceDB: OpaquePointer?
        let tracked = TimedSide(
            setUp: { (db, log) = try openStore("tracked.sqlite", copying: sources.tracked, setting) },
            body: { try body(db!) },
            tearDown: {
                let pending = try log!.pendingCount(db!)
                try db!.close()
                db = nil
                log = nil
                guard pending == expected.pending else {
                    throw BenchmarkFailure(description: "\(name): \(pending) pending changes, not \(expected.pending)")
                }
                try verify(setting.stores.path("tracked.sqlite"), expected, name)
            })
        let untracked = TimedSide(
            setUp: {
                db = try Database(path: setting.stores.replace("untracked.sqlite", with: sources.plain))
                if sources.plain == nil { try db!.execute(sql: setting.tableSQL) }
            },
            body: { try body(db!) },
            tearDown: {
                try db!.close()
                db = nil
                try verify(setting.stores.path("untracked.sqlite"), expected, name)
            })
        let untrackedC = TimedSide(
            setUp: {
                try check(
                    openReferenceDatabase(setting.stores.replace("reference.sqlite", with: sources.plain), &referenceDB)
                )
                if sources.plain == nil { try check(ref_exec(referenceDB, setting.tableSQL)) }
            },
            body: { try check(reference(referenceDB)) },
            tearDown: {
                ref_close(referenceDB)
                referenceDB = nil
                try verify(setting.stores.path("reference.sqlite"), expected, name)
            })
        let timings = try sampleAlternating(runs: options.runs, [tracked, untracked, untrackedC])
        return [
            ChangeLogResult(
                workload: name, rows: rows, ours: .time(timings[0]), baselineName: "C, untracked",
                baseline: .time(timings[2]), target: target.map { String(format: "≤ %.1fx", $0) } ?? "—",
                met: target.map { timings[0].median <= $0 * timings[2].median }),
            ChangeLogResult(
                workload: "  untracked, our Database layer", rows: rows, ours: .time(timings[1]),
                baselineName: "C, untracked", baseline: .time(timings[2]), target: "—", met: nil),
        ]
    }

    /// Both sides must leave the same rows: a workload that did less would look faster.
    private func verify(_ path: String, _ expected: Expected, _ name: String) throws {
        let db = try Database(path: path)
        defer { try? db.close() }
        let counts = try db.fetchOne("SELECT count(*), count(*) FILTER (WHERE updatedAt >= 1.8e9) FROM todos")
        let found: (Int, Int) = (try counts?.decode(at: 0) ?? -1, try counts?.decode(at: 1) ?? -1)
        guard found == (expected.rows, expected.updated) else {
            throw BenchmarkFailure(
                description: "\(name): \(path) holds \(found.0) rows, \(found.1) updated; expected "
                    + "\(expected.rows) and \(expected.updated)")
        }
    }

    /// The three figures of one read of the queue, each selectable with `--only`.
    private struct ReadNames {
        let read = "read every pending change, batches of \(PendingReadProbe.batchSize)"
        let memory = "  peak memory growth while reading (VmHWM)"
        let count = "  pendingCount"
    }

    /// Reading a queue of `pendingRows` inserts: ours in a fresh child process each run (its peak
    /// memory is the read's alone) against the same reads in C in this process, then the peak's
    /// growth (the highest over the runs) and the time of `pendingCount`.
    private func readPending(_ names: ReadNames, _ setting: Setting) throws -> [ChangeLogResult] {
        let path = try pendingStore(setting)
        var reports: [PendingReadReport] = []
        var referenceTimes: [Double] = []
        let clock = ContinuousClock()
        func readInC() throws -> Double {
            var reference: OpaquePointer?
            try check(openReferenceDatabase(path, &reference))
            defer { ref_close(reference) }
            let meta = Metadatabase.path(forDatabaseAt: path).replacingOccurrences(of: "'", with: "''")
            try check(ref_exec(reference, "ATTACH DATABASE '\(meta)' AS \(Metadatabase.schemaName)"))
            var count: Int64 = 0
            var checksum: Int64 = 0
            let start = clock.now
            try check(ref_read_pending_todos(reference, Int64(PendingReadProbe.batchSize), &count, &checksum))
            let elapsed = clock.now - start
            guard count == pendingRows else {
                throw BenchmarkFailure(description: "the C reference read \(count) changes, not \(pendingRows)")
            }
            let (seconds, attoseconds) = elapsed.components
            return Double(seconds) * 1000 + Double(attoseconds) / 1e15
        }
        // One untimed round of each warms the page cache; then the two take turns going first.
        _ = try PendingReadProbe.measure(storeAt: path)
        _ = try readInC()
        for round in 0..<options.runs {
            if round % 2 == 1 { referenceTimes.append(try readInC()) }
            let report = try PendingReadProbe.measure(storeAt: path)
            guard report.changes == pendingRows else {
                throw BenchmarkFailure(description: "ours read \(report.changes) changes, not \(pendingRows)")
            }
            reports.append(report)
            if round % 2 == 0 { referenceTimes.append(try readInC()) }
        }
        let peakGrowth = reports.map(\.peakGrowthBytes).max() ?? 0
        let peakNote = reports.allSatisfy(\.peakWasReset) ? "" : " (peak not reset: includes start-up)"
        return [
            ChangeLogResult(
                workload: names.read, rows: pendingRows,
                ours: .time(TimingSummary(reports.map(\.readMilliseconds))),
                baselineName: "C, same reads", baseline: .time(TimingSummary(referenceTimes)), target: "—", met: nil),
            ChangeLogResult(
                workload: names.memory + peakNote, rows: pendingRows,
                ours: .bytes(peakGrowth), baselineName: nil, baseline: nil,
                target: "< \(Self.readMemoryTarget / 1_048_576) MiB", met: peakGrowth < Self.readMemoryTarget),
            ChangeLogResult(
                workload: names.count, rows: pendingRows,
                ours: .time(TimingSummary(reports.map(\.countMilliseconds))), baselineName: nil, baseline: nil,
                target: "—", met: nil),
        ]
    }

    /// A store whose log holds `pendingRows` pending inserts, written by one `INSERT … SELECT`
    /// with tracking on (each row fires the trigger, as separate inserts would), checkpointed.
    private func pendingStore(_ setting: Setting) throws -> String {
        let path = try setting.stores.replace("pending.sqlite", with: nil)
        let db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: setting.migrator)
        // MATERIALIZED: each row's random key is drawn once, not once per use of `h`.
        try db.transaction(.immediate) { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?),
                    keys(i, h) AS MATERIALIZED (SELECT i, hex(randomblob(16)) FROM n)
                    INSERT INTO todos (id, title, done, updatedAt)
                    SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-' || substr(h, 13, 4) || '-'
                        || substr(h, 17, 4) || '-' || substr(h, 21), 'Todo #' || i, i % 2, 1.7e9 + i
                    FROM keys
                    """, arguments: [Int64(pendingRows - 1)])
        }
        // Folded, as a push would before reading (the C reference reads the keyed log).
        try log.foldJournal(db)
        try ChangeLogStores.finish(db)
        return path
    }

    private func check(_ code: Int32) throws {
        guard code == 0 else { throw BenchmarkFailure(description: "the C reference failed with SQLite code \(code)") }
    }
}
