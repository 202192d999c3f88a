import CReferenceBench
import Foundation
import OfflineStore

protocol ReminderFields {
    var id: Int64 { get }
    var title: String { get }
    var done: Bool { get }
    var updatedAt: Double { get }
}

/// The reminder row every database workload writes and reads.
struct BenchReminder: Codable, FetchableRecord, PersistableRecord, ReminderFields {
    static let databaseTableName = "reminders"
    var id: Int64
    var title: String
    var done: Bool
    var updatedAt: Double
}

/// The same row read by hand, by column index: the fast path for hot code.
struct HandReadReminder: FetchableRecord, ReminderFields {
    var id: Int64
    var title: String
    var done: Bool
    var updatedAt: Double

    init(row: Row) throws {
        id = try row.decode(at: 0)
        title = try row.decode(at: 1)
        done = try row.decode(at: 2)
        updatedAt = try row.decode(at: 3)
    }
}

/// Workloads of the SQLite layer on `rows` reminders, ours against plain C on the same file settings.
struct DatabaseWorkloads {
    let options: BenchmarkOptions

    func run() throws -> [BenchmarkResult] {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("ostore-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bench.sqlite").path

        var configuration = Configuration()
        configuration.journalMode = .wal
        configuration.synchronous = .normal
        configuration.foreignKeysEnabled = true
        let db = try Database(path: path, configuration: configuration)
        var reference: OpaquePointer?
        try check(openReferenceDatabase(path, &reference))
        defer { ref_close(reference) }

        let count = options.rows ?? 200_000
        let titles = (0..<count).map { "Reminder #\($0)" }
        let records = (0..<count).map { (index: Int) -> BenchReminder in
            let updatedAt = 1.7e9 + Double(index)
            return BenchReminder(id: Int64(index + 1), title: titles[index], done: index % 2 == 1, updatedAt: updatedAt)
        }
        guard let referenceTitles = ref_make_titles(Int64(count)) else {
            throw BenchmarkFailure(description: "out of memory")
        }
        defer { ref_free_titles(referenceTitles, Int64(count)) }

        func recreateTable() throws {
            try db.executeScript(
                """
                DROP TABLE IF EXISTS reminders;
                CREATE TABLE reminders (id INTEGER PRIMARY KEY, title TEXT, done INTEGER, updatedAt REAL);
                PRAGMA wal_checkpoint(TRUNCATE);
                """)
        }
        func referenceInsert() throws {
            try check(ref_insert_reminders(reference, Int64(count), referenceTitles))
        }

        var results: [BenchmarkResult] = []
        func record(_ name: String, _ times: @autoclosure () throws -> (ours: Double, reference: Double)) rethrows {
            guard options.includes(name) else { return }
            let (ours, reference) = try times()
            results.append(BenchmarkResult(workload: name, oursMilliseconds: ours, referenceMilliseconds: reference))
        }

        try record(
            "insert, prepared statement",
            try measure(
                runs: options.runs, setUp: recreateTable,
                ours: {
                    try db.transaction(.immediate) { db in
                        let insert = try db.cachedStatement(
                            "INSERT INTO reminders (id, title, done, updatedAt) VALUES (?, ?, ?, ?)")
                        for index in 0..<count {
                            try insert.execute(Int64(index + 1), titles[index], index % 2 == 1, 1.7e9 + Double(index))
                        }
                    }
                }, reference: referenceInsert))

        try record(
            "insert, Codable records",
            try measure(
                runs: options.runs, setUp: recreateTable,
                ours: {
                    try db.transaction(.immediate) { db in
                        for reminder in records { try reminder.insert(db) }
                    }
                }, reference: referenceInsert))

        // The rows as the update workloads write them, by key, over the rows inserted before.
        let updated = records.enumerated().map { index, record in
            BenchReminder(
                id: record.id, title: record.title, done: (index + 1) % 2 == 1, updatedAt: 1.8e9 + Double(index))
        }
        func insertedTable() throws {
            try recreateTable()
            try referenceInsert()
        }
        try record(
            "update by key, Codable records",
            try measure(
                runs: options.runs, setUp: insertedTable,
                ours: {
                    try db.transaction(.immediate) { db in
                        for reminder in updated { try reminder.update(db) }
                    }
                }, reference: { try check(ref_update_reminders(reference, Int64(count), referenceTitles)) }))
        try record(
            "upsert, Codable records",
            try measure(
                runs: options.runs, setUp: insertedTable,
                ours: {
                    try db.transaction(.immediate) { db in
                        for reminder in updated { try reminder.upsert(db) }
                    }
                }, reference: { try check(ref_upsert_reminders(reference, Int64(count), referenceTitles)) }))

        try recreateTable()
        try referenceInsert()
        let expectedChecksum = try referenceFetchChecksum(reference)

        try record(
            "fetch all, Codable records",
            try measure(
                runs: options.runs, setUp: {},
                ours: {
                    let fetched = try BenchReminder.fetchAll(db, "SELECT id, title, done, updatedAt FROM reminders")
                    try verify(checksum(fetched), expectedChecksum)
                }, reference: { _ = try referenceFetchChecksum(reference) }))

        try record(
            "fetch all, hand-written init(row:)",
            try measure(
                runs: options.runs, setUp: {},
                ours: {
                    let fetched = try HandReadReminder.fetchAll(db, "SELECT id, title, done, updatedAt FROM reminders")
                    try verify(checksum(fetched), expectedChecksum)
                }, reference: { _ = try referenceFetchChecksum(reference) }))

        try record(
            "cursor scan, every column",
            try measure(
                runs: options.runs, setUp: {},
                ours: {
                    let cursor = try db.fetchCursor("SELECT id, title, done, updatedAt FROM reminders")
                    var scanned = 0
                    var checksum: Int64 = 0
                    while let row = try cursor.next() {
                        checksum &+= try row.decode(Int64.self, at: 0)
                        checksum &+= Int64(try row.decode(String.self, at: 1).utf8.count)
                        checksum &+= try row.decode(Bool.self, at: 2) ? 1 : 0
                        checksum &+= Int64(try row.decode(Double.self, at: 3))
                        scanned += 1
                    }
                    try verify(checksum, expectedChecksum)
                    try verify(Int64(scanned), Int64(count))
                },
                reference: {
                    var scanned: Int64 = 0
                    var checksum: Int64 = 0
                    try check(ref_scan_reminders(reference, &scanned, &checksum))
                }))
        return results
    }

    /// The same sum the C reference computes over the fetched structs.
    private func checksum(_ reminders: [some ReminderFields]) -> Int64 {
        var sum: Int64 = 0
        for reminder in reminders {
            sum &+= reminder.id &+ Int64(reminder.title.utf8.count) &+ (reminder.done ? 1 : 0)
            sum &+= Int64(reminder.updatedAt)
        }
        return sum
    }

    private func referenceFetchChecksum(_ reference: OpaquePointer?) throws -> Int64 {
        var fetched: Int64 = 0
        var checksum: Int64 = 0
        try check(ref_fetch_all_reminders(reference, &fetched, &checksum))
        return checksum
    }

    private func verify(_ actual: Int64, _ expected: Int64) throws {
        guard actual == expected else {
            throw BenchmarkFailure(
                description: "ours read \(actual), the C reference \(expected): the workloads differ")
        }
    }

    private func check(_ code: Int32) throws {
        guard code == 0 else { throw BenchmarkFailure(description: "the C reference failed with SQLite code \(code)") }
    }
}
