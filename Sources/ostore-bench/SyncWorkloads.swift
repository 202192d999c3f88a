import CReferenceBench
import Foundation
import OfflineStore
import SyncProtocol
import SyncServer

/// What `ostore-bench sync` is asked to do.
struct SyncBenchOptions {
    /// Changes client A commits offline and client B pulls.
    var changes = 100_000
    /// Rows of the dataset an empty client downloads on its first sync; 0 skips that workload.
    var firstSyncRows = 1_000_000
    /// The first-sync dataset's schema: `todos` alone, or todos in lists (a foreign key).
    var firstSyncSchema = FirstSyncSchema.todos
    /// `ostore-server serve --threads`.
    var serverThreads = 4
    /// Push–pull runs, each on a fresh server and fresh stores; the one with the median end-to-end
    /// time is reported, with the range of all.
    var runs = 1
    /// An `ostore-server` executable other than the one beside `ostore-bench`.
    var server: String?
    /// Where the first-sync dataset is kept between runs (made on the first run with that row
    /// count, copied afterwards); nil makes it afresh every time.
    var seedCache: String?
    /// A round trip the clients' requests pay on their way to the server and back (a
    /// ``LatencyRelay`` between them); nil for loopback as it is.
    var roundTrip: Duration?
    /// The clients' `SyncEngine.Configuration.pushesInFlight`; nil for the engine's default.
    var pushesInFlight: Int?
    var json = false
}

/// `ostore-bench sync`: the sync engine end to end, against a real `ostore-server` process.
///
/// 1. Clients A and B (stores of the change-log bench's `todos` table) each sync once with the
///    empty dataset, as devices already in use do. A then commits `changes` inserts offline (one
///    transaction, tracked), syncs (pushes them), and B syncs (pulls and applies them). Each sync
///    runs in a child process (``SyncClientRun``): its time, the part spent inside requests, and
///    its own peak memory.
/// 2. A dataset of `firstSyncRows` rows, stored through the server's own storage before the server
///    starts, is downloaded by a client with an empty store on its first sync. With
///    `firstSyncSchema` `.lists` the rows are todos each in one of 1,000 lists (``ListsBenchPlan``,
///    a foreign key), the lists first in the dataset, as a device that made them pushed them.
///
/// The limit each is compared with, measured in the same run: C inserting the same rows into a
/// file without a change log (`ref_insert_todos`, one prepared statement, one transaction), plus
/// the same requests with the same body sizes over one kept-alive libcurl connection to a
/// libmicrohttpd server that only counts bytes (`ref_http_transfer`). B's rows, the first-synced
/// client's rows and the C files' rows are compared afterwards.
struct SyncWorkloads {
    let options: SyncBenchOptions

    /// The targets: changes per second end to end, the first sync's time and its peak memory.
    static let endToEndTarget = 50_000.0
    static let firstSyncTargetMilliseconds = 60_000.0
    static let firstSyncMemoryTarget = 100_000_000

    func run() throws -> [SyncResult] {
        let executable = try ServerProcess.executable(options.server)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ostore-bench-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var runs: [[SyncResult]] = []
        for run in 0..<options.runs {
            runs.append(
                try endToEnd(executable: executable, directory: directory.appendingPathComponent("push-pull-\(run)")))
        }
        var results = Self.medianRun(of: runs)
        if options.firstSyncRows > 0 {
            results += try firstSync(executable: executable, directory: directory.appendingPathComponent("first"))
        }
        return results
    }

    /// The rows both sides write: a UUID text key, a title, `done` alternating, `updatedAt` growing,
    /// as the change-log bench and `ref_insert_todos` write them.
    private struct Todos {
        let ids: [String]
        let titles: [String]
        let referenceIDs: CStringArray
        let referenceTitles: CStringArray

        /// `reproducible`: the same keys on every run (a kept dataset must match the C reference),
        /// in UUID form and scattered like random ones (index times an odd constant, modulo 2^48).
        init(count: Int, reproducible: Bool = false) {
            ids = (0..<count).map { index in
                guard reproducible else { return UUID().uuidString }
                let scattered = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 & 0xFFFF_FFFF_FFFF
                let hex = String(scattered, radix: 16, uppercase: true)
                return "00000000-0000-4000-8000-" + String(repeating: "0", count: 12 - hex.count) + hex
            }
            titles = (0..<count).map { "Todo #\($0)" }
            referenceIDs = CStringArray(ids)
            referenceTitles = CStringArray(titles)
        }

        var count: Int { ids.count }
    }

    private func endToEnd(executable: URL, directory: URL) throws -> [SyncResult] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let todos = Todos(count: options.changes)
        let server = try ServerProcess(
            executable: executable, directory: directory.appendingPathComponent("server"),
            threads: options.serverThreads)
        defer { server.stop() }
        let relay = try options.roundTrip.map { try LatencyRelay(upstreamPort: server.port, roundTrip: $0) }
        defer { relay?.stop() }
        let root = relay.map { URL(string: "http://127.0.0.1:\($0.port)")! }
        let storeA = directory.appendingPathComponent("a.sqlite").path
        let storeB = directory.appendingPathComponent("b.sqlite").path
        for store in [storeA, storeB] {
            let first = try SyncClientRun.measure(storeAt: store, server: server, root: root)
            guard first.pushed == 0, first.pulled == 0 else {
                throw BenchmarkFailure(description: "the first sync with an empty dataset moved changes")
            }
        }

        let commitMilliseconds = try commit(todos, to: storeA)
        let pushCPU = server.cpuSeconds()
        let push = try SyncClientRun.measure(
            storeAt: storeA, server: server, root: root, pushesInFlight: options.pushesInFlight)
        let pullCPU = server.cpuSeconds()
        let pull = try SyncClientRun.measure(storeAt: storeB, server: server, root: root)
        let endCPU = server.cpuSeconds()
        server.stop()
        guard push.pushed == todos.count, pull.pulled == todos.count else {
            throw BenchmarkFailure(
                description: "A pushed \(push.pushed) and B pulled \(pull.pulled) changes, not \(todos.count)")
        }

        let reference = directory.appendingPathComponent("reference.sqlite").path
        let insertMilliseconds = try insertInC(todos, at: reference, tableSQL: try tableSQL(storeA))
        try verifySameRows(storeA, reference)
        try verifySameRows(storeB, reference)
        let pushTransfer = try transferLimit(push.exchanges)
        let pullTransfer = try transferLimit(pull.exchanges)

        let count = todos.count
        let endToEnd = push.syncMilliseconds + pull.syncMilliseconds
        let endToEndRate = Double(count) / endToEnd * 1000
        return [
            SyncResult(
                workload: "A commits offline (tracked inserts)", changes: count, ours: commitMilliseconds,
                referenceName: "C insert", reference: insertMilliseconds),
            SyncResult(
                workload: "A pushes (sync)", changes: count, ours: push.syncMilliseconds,
                referenceName: "HTTP" + roundTrips,
                reference: pushTransfer, serverCPUMilliseconds: (pullCPU - pushCPU) * 1000,
                clientCPUMilliseconds: push.cpuMilliseconds, clientPeakBytes: push.peakBytes),
            SyncResult(
                workload: "B pulls and applies (sync)", changes: count, ours: pull.syncMilliseconds,
                referenceName: "HTTP\(roundTrips) + C insert", reference: pullTransfer + insertMilliseconds,
                serverCPUMilliseconds: (endCPU - pullCPU) * 1000, clientCPUMilliseconds: pull.cpuMilliseconds,
                clientPeakBytes: pull.peakBytes),
            SyncResult(
                workload: "end to end: push + pull and apply", changes: count, ours: endToEnd,
                referenceName: "HTTP\(roundTrips) both ways + C insert",
                reference: pushTransfer + pullTransfer + insertMilliseconds,
                serverCPUMilliseconds: (endCPU - pushCPU) * 1000,
                clientCPUMilliseconds: push.cpuMilliseconds + pull.cpuMilliseconds,
                target: String(format: "≥ %.0f changes/s", Self.endToEndTarget),
                met: endToEndRate >= Self.endToEndTarget),
        ]
    }

    /// The run whose end-to-end time is the median (the slower middle one of an even count), its
    /// end-to-end row carrying every run's rate and how many met the target. A shared machine's speed
    /// changes from minute to minute, so one run says little about the next.
    static func medianRun(of runs: [[SyncResult]]) -> [SyncResult] {
        precondition(!runs.isEmpty && runs.allSatisfy { $0.last != nil }, "at least one run, each with its end to end")
        let sorted = runs.sorted { $0.last!.oursMilliseconds < $1.last!.oursMilliseconds }
        var median = sorted[sorted.count / 2]
        guard runs.count > 1 else { return median }
        let rates = runs.map { $0.last!.changesPerSecond }
        var endToEnd = median.removeLast()
        endToEnd.runRates = rates
        endToEnd.target += " (\(rates.filter { $0 >= endToEndTarget }.count) of \(runs.count) runs)"
        return median + [endToEnd]
    }

    private func firstSync(executable: URL, directory: URL) throws -> [SyncResult] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let todos = Todos(count: options.firstSyncRows, reproducible: options.seedCache != nil)
        let seedStart = ContinuousClock.now
        let serverDirectory = directory.appendingPathComponent("server")
        if let cache = options.seedCache {
            let name =
                (options.firstSyncSchema == .todos ? "" : "\(options.firstSyncSchema.rawValue)-") + "\(todos.count)"
            let kept = URL(fileURLWithPath: cache).appendingPathComponent("first-sync-\(name)")
            if !FileManager.default.fileExists(atPath: kept.path) {
                let making = URL(fileURLWithPath: cache).appendingPathComponent("making-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: making, withIntermediateDirectories: true)
                do {
                    let storage = try SQLiteSyncStorage(directory: making)
                    try storage.createDataset(named: ServerProcess.dataset)
                    try seed(storage, with: todos)
                }
                try FileManager.default.moveItem(at: making, to: kept)
            }
            try FileManager.default.createDirectory(at: serverDirectory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: kept, to: serverDirectory.appendingPathComponent("data"))
        }
        let server = try ServerProcess(
            executable: executable, directory: serverDirectory, threads: options.serverThreads,
            prepare: { storage in if options.seedCache == nil { try seed(storage, with: todos) } })
        defer { server.stop() }
        let relay = try options.roundTrip.map { try LatencyRelay(upstreamPort: server.port, roundTrip: $0) }
        defer { relay?.stop() }
        let seconds = String(format: "%.1f", milliseconds(ContinuousClock.now - seedStart) / 1000)
        FileHandle.standardError.write(
            Data(
                "ostore-bench sync: the dataset of \(todos.count) rows made or copied in \(seconds) s (not timed)\n"
                    .utf8))
        let store = directory.appendingPathComponent("new.sqlite").path
        let startCPU = server.cpuSeconds()
        let first = try SyncClientRun.measure(
            storeAt: store, server: server, schema: options.firstSyncSchema,
            root: relay.map { URL(string: "http://127.0.0.1:\($0.port)")! })
        let endCPU = server.cpuSeconds()
        server.stop()
        guard first.pulled >= todos.count else {
            throw BenchmarkFailure(description: "the first sync pulled \(first.pulled) changes, not \(todos.count)")
        }

        let reference = directory.appendingPathComponent("reference.sqlite").path
        let insertMilliseconds = try insertInC(todos, at: reference, tableSQL: try tableSQL(store))
        try verifySameRows(store, reference)
        if options.firstSyncSchema == .lists { try verifyEveryTodoInItsList(store, todos: todos.count) }
        let transfer = try transferLimit(first.exchanges)
        let met =
            first.syncMilliseconds < Self.firstSyncTargetMilliseconds && first.peakBytes < Self.firstSyncMemoryTarget
        return [
            SyncResult(
                workload: options.firstSyncSchema == .todos
                    ? "first sync into an empty client"
                    : "first sync into an empty client (todos in \(ListsBenchPlan.listCount) lists, a foreign key)",
                changes: todos.count, ours: first.syncMilliseconds,
                referenceName: "HTTP\(roundTrips) + C insert", reference: transfer + insertMilliseconds,
                serverCPUMilliseconds: (endCPU - startCPU) * 1000, clientCPUMilliseconds: first.cpuMilliseconds,
                clientPeakBytes: first.peakBytes,
                target: String(
                    format: "< %.0f s, peak < %d MB", Self.firstSyncTargetMilliseconds / 1000,
                    Self.firstSyncMemoryTarget / 1_000_000),
                met: met)
        ]
    }

    /// Client A's offline work: every todo inserted through the change log, in one transaction.
    private func commit(_ todos: Todos, to path: String) throws -> Double {
        let db = try Database(path: path)
        _ = try ChangeLog.open(db, migrator: try Migrator(plan: ChangeLogBenchPlan.self))
        let clock = ContinuousClock()
        let start = clock.now
        try db.transaction(.immediate) { db in
            let insert = try db.cachedStatement("INSERT INTO todos (id, title, done, updatedAt) VALUES (?, ?, ?, ?)")
            for index in 0..<todos.count {
                try insert.execute(todos.ids[index], todos.titles[index], index % 2 == 1, 1.7e9 + Double(index))
            }
        }
        let elapsed = milliseconds(clock.now - start)
        try db.close()
        return elapsed
    }

    /// The dataset of the first-sync workload, stored as pushes from one site would store it, in
    /// batches of the protocol's largest push.
    private func seed(_ storage: SQLiteSyncStorage, with todos: Todos) throws {
        let site = SiteID(bytes: Data((0..<16).map { _ in UInt8.random(in: 0...255) }))!
        // An hour ago, so no clock is ahead of the client's.
        let base = Int64(Date().timeIntervalSince1970 * 1000) - 3_600_000
        let batch = Limits.standard.maxChangesPerPush
        let inLists = options.firstSyncSchema == .lists
        // The lists come first, as the device that made them pushed them before their todos.
        let lists = inLists ? ListsBenchPlan.listCount : 0
        let listIDs = (0..<lists).map { "00000000-0000-4000-9000-" + String(format: "%012d", $0) }
        func clock(_ place: Int) -> ChangeClock {
            ChangeClock(validMilliseconds: base + Int64(place >> 16), counter: Int64(place & 0xFFFF))
        }
        for start in stride(from: 0, to: lists, by: batch) {
            let changes = (start..<min(start + batch, lists)).map { index in
                let id = WireValue.text(listIDs[index])
                return Change(
                    table: "lists", key: ["id": id], op: .insert, columns: ["id": id, "name": .text("List #\(index)")],
                    clock: clock(index), site: site, seq: Int64(index + 1))
            }
            _ = try storage.storeBatch(
                changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: ServerProcess.dataset)
        }
        for start in stride(from: 0, to: todos.count, by: batch) {
            let changes = (start..<min(start + batch, todos.count)).map { index in
                let id = WireValue.text(todos.ids[index])
                var columns: [String: WireValue] = [
                    "id": id, "title": .text(todos.titles[index]), "done": .integer(Int64(index % 2)),
                    "updatedAt": .real(1.7e9 + Double(index)),
                ]
                if inLists { columns["listID"] = .text(listIDs[index % lists]) }
                return Change(
                    table: "todos", key: ["id": id], op: .insert, columns: columns, clock: clock(lists + index),
                    site: site, seq: Int64(lists + index + 1))
            }
            _ = try storage.storeBatch(
                changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: ServerProcess.dataset)
        }
    }

    /// `CREATE TABLE todos …` as the store's migrator wrote it, after `CREATE TABLE lists …` when
    /// the store has that table (todos refer to it; the C reference inserts todos without a list).
    private func tableSQL(_ store: String) throws -> String {
        let db = try Database(path: store)
        defer { try? db.close() }
        let sql = try db.fetchAll(
            String.self,
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name IN ('lists', 'todos') ORDER BY name")
        guard sql.count == 1 || sql.count == 2, let todos = sql.last, todos.contains("todos") else {
            throw BenchmarkFailure(description: "\(store) has no todos table")
        }
        return sql.joined(separator: ";\n")
    }

    /// The C reference's rows: the same todos into a file without a change log. Returns milliseconds.
    private func insertInC(_ todos: Todos, at path: String, tableSQL: String) throws -> Double {
        var db: OpaquePointer?
        try check(openReferenceDatabase(path, &db), "opening \(path)")
        defer { ref_close(db) }
        try check(ref_exec(db, tableSQL), "creating todos")
        let clock = ContinuousClock()
        let start = clock.now
        try check(
            ref_insert_todos(db, Int64(todos.count), todos.referenceIDs.pointers, todos.referenceTitles.pointers),
            "inserting todos")
        return milliseconds(clock.now - start)
    }

    /// The C reference's transfer, plus with ``SyncBenchOptions/roundTrip`` one round trip per
    /// request (as one request at a time over a network with that round trip would take; the relay
    /// is not in the C transfer's way). Returns milliseconds.
    private func transferLimit(_ exchanges: [MeteredTransport.Exchange]) throws -> Double {
        try transferInC(exchanges) + (options.roundTrip.map { milliseconds($0) * Double(exchanges.count) } ?? 0)
    }

    /// How the limit names the round trips it adds: nothing on loopback as it is.
    private var roundTrips: String {
        options.roundTrip.map { " + \(Int(milliseconds($0))) ms × requests" } ?? ""
    }

    /// The C reference's transfer: the same requests with the same body sizes. Returns milliseconds.
    private func transferInC(_ exchanges: [MeteredTransport.Exchange]) throws -> Double {
        let sent = exchanges.map { Int64($0.sent) }
        let received = exchanges.map { Int64($0.received) }
        var nanoseconds: Int64 = 0
        try check(ref_http_transfer(Int64(exchanges.count), sent, received, &nanoseconds), "the HTTP transfer")
        return Double(nanoseconds) / 1e6
    }

    /// Both files hold the same todos, compared row by row (a digest of every value in key order).
    private func verifySameRows(_ path: String, _ expected: String) throws {
        func digest(_ path: String) throws -> (rows: Int, hash: Int) {
            let db = try Database(path: path)
            defer { try? db.close() }
            var hasher = Hasher()
            var rows = 0
            let cursor = try db.fetchCursor("SELECT id, title, done, updatedAt FROM todos ORDER BY id")
            while let row = try cursor.next() {
                hasher.combine(try row.decode(String.self, at: 0))
                hasher.combine(try row.decode(String.self, at: 1))
                hasher.combine(try row.decode(Int64.self, at: 2))
                hasher.combine(try row.decode(Double.self, at: 3))
                rows += 1
            }
            return (rows, hasher.finalize())
        }
        let (ours, theirs) = (try digest(path), try digest(expected))
        guard ours == theirs else {
            throw BenchmarkFailure(
                description: "\(path) holds \(ours.rows) todos that differ from the \(theirs.rows) of \(expected)")
        }
    }

    /// The first-synced store of the lists schema holds every list, and every todo points at one.
    private func verifyEveryTodoInItsList(_ path: String, todos: Int) throws {
        let db = try Database(path: path)
        defer { try? db.close() }
        let lists = try db.fetchValue(Int.self, "SELECT count(*) FROM lists") ?? 0
        let inLists =
            try db.fetchValue(Int.self, "SELECT count(*) FROM todos JOIN lists ON lists.id = todos.listID") ?? 0
        guard lists == ListsBenchPlan.listCount, inLists == todos else {
            throw BenchmarkFailure(
                description: "\(path) holds \(lists) lists and \(inLists) of \(todos) todos in one of them")
        }
    }

    private func check(_ code: Int32, _ what: String) throws {
        guard code == 0 else { throw BenchmarkFailure(description: "C reference: \(what) failed with code \(code)") }
    }
}
