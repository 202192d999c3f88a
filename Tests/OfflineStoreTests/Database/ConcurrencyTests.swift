import Dispatch
import Foundation
import OfflineStore
import TestSupport
import Testing

/// DatabasePool: one writer, concurrent WAL readers. Run under TSan with
/// `swift test --filter ConcurrencyTests --sanitize=thread`.
@Suite struct ConcurrencyTests {
    static func makePool(_ directory: TemporaryDirectory, readers: Int = 4) throws -> DatabasePool {
        let pool = try DatabasePool(path: directory.path("pool.sqlite"), maximumReaderCount: readers)
        try pool.write { db in
            try db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, batch INTEGER NOT NULL)")
        }
        return pool
    }

    static func count(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM items") ?? -1
    }

    /// Observations of a pool while writers on several threads and another connection commit and
    /// observations are started and cancelled meanwhile: those still running end at the last count.
    @Test func observationsFollowWritersOnSeveralThreadsWhileOthersAreCancelled() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        let counts = (0..<3).map { _ in Locked<[Int]>([]) }
        var cancellables = counts.map { told in
            ValueObservation { db in try Self.count(db) }.start(
                in: pool, onError: { _ in }, onChange: { count in told.withLock { $0.append(count) } })
        }
        let group = DispatchGroup()
        for batch in 1...4 {
            DispatchQueue.global().async(group: group) {
                for _ in 0..<25 {
                    try? pool.write { db in try db.execute("INSERT INTO items (batch) VALUES (\(batch))") }
                }
            }
        }
        DispatchQueue.global().async(group: group) {
            guard let other = try? Database(path: pool.path) else { return }
            for _ in 0..<25 { try? other.execute("INSERT INTO items (batch) VALUES (\(5))") }
        }
        // Started and stopped while the writers run.
        for _ in 0..<5 {
            let passing = ValueObservation { db in try Self.count(db) }.start(
                in: pool, onError: { _ in }, onChange: { _ in })
            usleep(2_000)
            passing.cancel()
        }
        cancellables.removeLast().cancel()
        #expect(group.wait(timeout: .now() + 60) == .success)
        for told in counts.dropLast() {
            #expect(eventually(timeout: .seconds(10)) { told.value.last == 125 })
            // Each count told once, in the order the commits made them.
            #expect(told.value == told.value.sorted() && Set(told.value).count == told.value.count)
        }
        withExtendedLifetime(cancellables) {}
    }

    @Test func readersSeeTheLastCommitWhileAWriteIsInProgress() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        try pool.write { db in
            for _ in 0..<10 { try db.execute("INSERT INTO items (batch) VALUES (\(0))") }
        }

        let writerInside = DispatchSemaphore(value: 0)
        let releaseWriter = DispatchSemaphore(value: 0)
        let writerFinished = DispatchSemaphore(value: 0)
        let writeResult = Locked<Result<Int, any Error>?>(nil)
        DispatchQueue.global().async {
            let result = Result {
                try pool.write { db in
                    for _ in 0..<5 { try db.execute("INSERT INTO items (batch) VALUES (\(1))") }
                    let seenByWriter = try Self.count(db)
                    writerInside.signal()
                    // Hold the write transaction open until the readers are done.
                    _ = releaseWriter.wait(timeout: .now() + 30)
                    return seenByWriter
                }
            }
            writeResult.withLock { $0 = result }
            writerFinished.signal()
        }
        #expect(writerInside.wait(timeout: .now() + 10) == .success)

        // Several reads on other threads finish while the write is still open, and see the committed state.
        let readerCount = 6
        let counts = Locked<[Int]>([])
        let readErrors = Locked<[String]>([])
        let readsDone = DispatchGroup()
        for _ in 0..<readerCount {
            DispatchQueue.global().async(group: readsDone) {
                do {
                    let count = try pool.read { db in try Self.count(db) }
                    counts.withLock { $0.append(count) }
                } catch {
                    readErrors.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(readsDone.wait(timeout: .now() + 10) == .success, "readers were blocked by the writer")
        #expect(readErrors.value.isEmpty, "\(readErrors.value)")
        #expect(counts.value == Array(repeating: 10, count: readerCount))
        #expect(writeResult.value == nil, "the writer must still be inside its transaction")

        releaseWriter.signal()
        #expect(writerFinished.wait(timeout: .now() + 10) == .success)
        #expect(try writeResult.value?.get() == 15)

        // After the commit every reader sees the new rows.
        #expect(try pool.read { db in try Self.count(db) } == 15)
        let afterCommit = Locked<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            if let count = try? pool.read({ db in try Self.count(db) }) { afterCommit.withLock { $0.append(count) } }
        }
        #expect(afterCommit.value == [15, 15, 15, 15])
    }

    @Test func asyncReadsAndWritesFromManyTasks() async throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        let writers = 40
        let rowsPerWrite = 5

        let observed = try await withThrowingTaskGroup(of: [Int].self) { group in
            for batch in 0..<writers {
                group.addTask {
                    try await pool.write { db in
                        for _ in 0..<rowsPerWrite {
                            try db.execute("INSERT INTO items (batch) VALUES (\(batch))")
                        }
                    }
                    return []
                }
                group.addTask {
                    let count = try await pool.read { db in try Self.count(db) }
                    return [count]
                }
            }
            var observed: [Int] = []
            for try await counts in group { observed += counts }
            return observed
        }

        #expect(observed.count == writers)
        // Each write is one transaction: readers only ever see whole batches.
        #expect(observed.allSatisfy { $0 % rowsPerWrite == 0 && $0 >= 0 && $0 <= writers * rowsPerWrite })
        let total = try await pool.read { db in try Self.count(db) }
        #expect(total == writers * rowsPerWrite)
        let batches = try await pool.read { db in
            try db.fetchAll(Int.self, "SELECT count(*) FROM items GROUP BY batch ORDER BY batch")
        }
        #expect(batches == Array(repeating: rowsPerWrite, count: writers))
    }

    @Test func concurrentIncrementsAreNotLost() async throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        try await pool.write { db in
            try db.execute("CREATE TABLE counter (value INTEGER NOT NULL)")
            try db.execute("INSERT INTO counter VALUES (\(0))")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    try await pool.write { db in
                        // Read-modify-write in one IMMEDIATE transaction: no other writer can interleave.
                        let value = try db.fetchValue(Int.self, "SELECT value FROM counter") ?? 0
                        try db.execute("UPDATE counter SET value = \(value + 1)")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try await pool.read { db in try db.fetchValue(Int.self, "SELECT value FROM counter") } == 50)
    }

    @Test func reentrantWriteIsAMisuseNotADeadlock() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        let outcome = try onAnotherThread("a write inside a write") { () -> String in
            do {
                try pool.write { db in
                    try db.execute("INSERT INTO items (batch) VALUES (\(1))")
                    try pool.write { db in try db.execute("INSERT INTO items (batch) VALUES (\(2))") }
                }
                return "no error"
            } catch let error as DatabaseError {
                return error.resultCode == .misuse && error.message.contains("write called inside write")
                    ? "misuse" : "\(error)"
            }
        }
        #expect(outcome == "misuse")
        // The outer write was rolled back and the pool still works.
        #expect(try pool.read { db in try Self.count(db) } == 0)
        try pool.write { db in try db.execute("INSERT INTO items (batch) VALUES (\(3))") }
        #expect(try pool.read { db in try Self.count(db) } == 1)
    }

    @Test func reentrantReadIsAMisuseNotADeadlock() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory, readers: 1)
        let outcome = try onAnotherThread("a read inside a read") { () -> String in
            do {
                _ = try pool.read { _ in try pool.read { db in try Self.count(db) } }
                return "no error"
            } catch let error as DatabaseError {
                return error.resultCode == .misuse ? "misuse" : "\(error)"
            }
        }
        #expect(outcome == "misuse")
        #expect(try pool.read { db in try Self.count(db) } == 0)
    }

    @Test func readersCannotWrite() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        let error = try #require(throws: DatabaseError.self) {
            try pool.read { db in try db.execute("INSERT INTO items (batch) VALUES (\(1))") }
        }
        #expect(error.primaryResultCode == .readonly)
        #expect(try pool.read { db in try Self.count(db) } == 0)
    }

    @Test func writeRollsBackWhenTheBodyThrows() throws {
        struct Stop: Error {}
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        #expect(throws: Stop.self) {
            try pool.write { db in
                try db.execute("INSERT INTO items (batch) VALUES (\(1))")
                throw Stop()
            }
        }
        #expect(try pool.read { db in try Self.count(db) } == 0)
        try pool.writeWithoutTransaction { db in
            #expect(!db.isInsideTransaction)
            try db.execute("INSERT INTO items (batch) VALUES (\(1))")
        }
        #expect(try pool.read { db in try Self.count(db) } == 1)
    }

    @Test func poolRefusesInMemoryAndNonWALDatabases() throws {
        for path in [":memory:", ""] {
            let error = try #require(throws: DatabaseError.self) { try DatabasePool(path: path) }
            #expect(error.resultCode == .misuse)
        }
        let directory = try TemporaryDirectory()
        var configuration = Configuration()
        configuration.journalMode = .delete
        let error = try #require(throws: DatabaseError.self) {
            try DatabasePool(path: directory.path("delete.sqlite"), configuration: configuration)
        }
        #expect(error.resultCode == .misuse)
        configuration = Configuration()
        configuration.readonly = true
        #expect(throws: DatabaseError.self) {
            try DatabasePool(path: directory.path("readonly.sqlite"), configuration: configuration)
        }
    }

    @Test func closedPoolRefusesWork() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        _ = try pool.read { db in try Self.count(db) }
        try pool.close()
        let write = try #require(throws: DatabaseError.self) { try pool.write { _ in } }
        #expect(write.resultCode == .misuse)
        let read = try #require(throws: DatabaseError.self) { try pool.read { _ in } }
        #expect(read.resultCode == .misuse)
    }

    @Test func closedPoolRefusesAsyncWork() async throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        try pool.close()
        await #expect(throws: DatabaseError.self) { try await pool.read { db in try Self.count(db) } }
        await #expect(throws: DatabaseError.self) { try await pool.write { db in try Self.count(db) } }
    }

    @Test func prepareDatabaseRunsOnEveryConnection() async throws {
        let directory = try TemporaryDirectory()
        var configuration = Configuration()
        configuration.prepareDatabase = { db in
            try db.add(
                function: DatabaseFunction("shout", argumentCount: 1, deterministic: true) { arguments in
                    guard case .text(let text) = arguments[0] else { return nil }
                    return text.uppercased()
                })
        }
        let pool = try DatabasePool(path: directory.path("functions.sqlite"), configuration: configuration)
        #expect(try await pool.write { db in try db.fetchValue(String.self, "SELECT shout('a')") } == "A")
        let results = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<8 {
                group.addTask {
                    try await pool.read { db in try db.fetchValue(String.self, "SELECT shout(\("r\(index)"))") }
                }
            }
            var results: [String?] = []
            for try await result in group { results.append(result) }
            return results
        }
        #expect(Set(results.compactMap { $0 }) == Set((0..<8).map { "R\($0)" }))
    }

    /// Regression: a transaction left open by `writeWithoutTransaction` made every later
    /// `write` a savepoint of it, so nothing was ever committed.
    @Test func transactionLeftOpenByWriteWithoutTransactionIsRolledBack() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        let error = try #require(throws: DatabaseError.self) {
            try pool.writeWithoutTransaction { db in
                try db.execute("BEGIN IMMEDIATE")
                try db.execute("INSERT INTO items (batch) VALUES (\(1))")
            }
        }
        #expect(error.resultCode == .misuse)
        #expect(error.message.contains("left a transaction open"))
        try pool.write { db in try db.execute("INSERT INTO items (batch) VALUES (\(2))") }
        #expect(try pool.read { db in try db.fetchAll(Int.self, "SELECT batch FROM items") } == [2])
    }

    /// Regression: closing the pool inside its own write deadlocked on the writer lock.
    @Test func closingInsideAWriteIsAMisuseNotADeadlock() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory)
        let outcome = try onAnotherThread("close inside a write") { () -> String in
            do {
                try pool.write { _ in try pool.close() }
                return "no error"
            } catch let error as DatabaseError {
                return error.resultCode == .misuse ? "misuse" : "\(error)"
            }
        }
        #expect(outcome == "misuse")
        try pool.write { db in try db.execute("INSERT INTO items (batch) VALUES (\(1))") }
        try pool.close()
    }

    /// Regression: readers applied `query_only` before the app's preparation, so a
    /// preparation creating TEMP objects made every read fail.
    @Test func readerPreparationMayCreateTemporaryObjects() throws {
        let directory = try TemporaryDirectory()
        var configuration = Configuration()
        configuration.prepareDatabase = { db in
            try db.execute("CREATE TEMP TABLE IF NOT EXISTS scratch (x INTEGER)")
        }
        let pool = try DatabasePool(path: directory.path("prepared.sqlite"), configuration: configuration)
        try pool.write { db in try db.execute("CREATE TABLE items (id INTEGER PRIMARY KEY)") }
        #expect(try pool.read { db in try db.fetchValue(Int.self, "SELECT count(*) FROM temp.scratch") } == 0)
        let readOnly = try #require(throws: DatabaseError.self) {
            try pool.read { db in try db.execute("INSERT INTO items (id) VALUES (\(1))") }
        }
        #expect(readOnly.resultCode ~= .readonly)
    }

    /// Regression: a reader the body closed went back into the pool and failed every later read.
    @Test func readerClosedByItsBodyIsReplaced() throws {
        let directory = try TemporaryDirectory()
        let pool = try Self.makePool(directory, readers: 1)
        _ = try? pool.read { db in try db.close() }
        #expect(try pool.read { db in try Self.count(db) } == 0)
    }
    /// Regression (a flaky `MigrationCrashTests` run): connections opening a new file at the same
    /// moment failed at once with SQLITE_BUSY in `PRAGMA journal_mode = WAL`, whatever their busy
    /// timeout. Switching a file into WAL writes its header from inside the pragma's read
    /// transaction, and SQLite calls no busy handler for a read that must become a write (it
    /// could deadlock), so the switch is retried until the timeout. Before: 8 threads opening each
    /// of 400 new files, 1 to 10 of the 3,200 opens failed, in each of three runs.
    @Test func connectionsOpeningANewFileAtOnceAllSwitchItToWAL() throws {
        let directory = try TemporaryDirectory()
        let failures = Locked<[String]>([])
        for round in 0..<400 {
            let path = directory.path("new-\(round).sqlite")
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                do {
                    let db = try Database(path: path)
                    #expect(try db.fetchValue(String.self, "PRAGMA journal_mode") == "wal")
                    try db.close()
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)
    }
}
