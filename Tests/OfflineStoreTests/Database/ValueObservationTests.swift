import Foundation
import OfflineStore
import TestSupport
import Testing

/// A query observed in a pool is told its result, then each new one once, after the commits that
/// wrote a table it read: the pool's own, another connection's, another process's.
@Suite("Observing a query")
struct ValueObservationTests {
    let directory: TemporaryDirectory
    let pool: DatabasePool

    init() throws {
        directory = try TemporaryDirectory()
        pool = try DatabasePool(path: directory.path("observed.sqlite"))
        try pool.write { db in
            try db.executeScript(
                """
                CREATE TABLE lists (id TEXT PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE reminders (id TEXT PRIMARY KEY, title TEXT NOT NULL,
                    listID TEXT REFERENCES lists(id) ON DELETE CASCADE);
                CREATE TABLE tags (id TEXT PRIMARY KEY, name TEXT NOT NULL);
                CREATE VIEW listNames AS SELECT name FROM lists;
                """)
        }
    }

    /// What an observation told, and how many times its query ran.
    final class Told<Value: Sendable>: Sendable {
        let values = Locked<[Value]>([])
        let runs = Locked(0)
        let error = Locked<(any Error)?>(nil)
    }

    func observe<Value: Sendable & Equatable>(_ fetch: @escaping @Sendable (Database) throws -> Value) -> (
        Told<Value>, ObservationCancellable
    ) {
        let told = Told<Value>()
        let cancellable = ValueObservation { db in
            told.runs.withLock { $0 += 1 }
            return try fetch(db)
        }
        .start(
            in: pool, onError: { error in told.error.value = error },
            onChange: { value in told.values.withLock { $0.append(value) } })
        return (told, cancellable)
    }

    static func titles(_ db: Database) throws -> [String] {
        try db.fetchAll(String.self, "SELECT title FROM reminders ORDER BY title")
    }

    @Test func eachNewResultIsToldOnceAndAnUnchangedOneNot() throws {
        let (told, cancellable) = observe(Self.titles)
        #expect(eventually { told.values.value == [[]] })
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r1', 'Milk')") }
        #expect(eventually { told.values.value == [[], ["Milk"]] })
        // Written, and the result is the same: run, not told.
        #expect(told.runs.value == 2)
        try pool.write { db in try db.execute("UPDATE reminders SET title = 'Milk' WHERE id = 'r1'") }
        #expect(eventually { told.runs.value == 3 })
        #expect(told.values.value == [[], ["Milk"]])
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r2', 'Tea')") }
        #expect(eventually { told.values.value == [[], ["Milk"], ["Milk", "Tea"]] })
        cancellable.cancel()
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r3', 'Jam')") }
        usleep(200_000)
        #expect(told.values.value.count == 3)
    }

    @Test func aCommitOfOtherTablesOrARollbackRunsNothing() throws {
        let (told, cancellable) = observe(Self.titles)
        #expect(eventually { told.values.value.count == 1 })
        for index in 0..<5 {
            try pool.write { db in try db.execute("INSERT INTO tags (id, name) VALUES (\("t\(index)"), 'x')") }
        }
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try pool.write { db in
                try db.execute("INSERT INTO reminders (id, title) VALUES ('gone', 'Never')")
                throw Abandon()
            }
        }
        // Past the polling interval: the pool's own commits do not count as another connection's.
        usleep(200_000)
        #expect(told.runs.value == 1)
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r1', 'Milk')") }
        #expect(eventually { told.values.value == [[], ["Milk"]] })
        #expect(told.runs.value == 2)
        withExtendedLifetime(cancellable) {}
    }

    /// The tables are SQLite's: those under a view, a join's, and a count's, which reads no column.
    @Test func theTablesOfViewsJoinsAndCountsAreFollowed() throws {
        let (names, namesCancellable) = observe { db in try db.fetchAll(String.self, "SELECT name FROM listNames") }
        let (joined, joinedCancellable) = observe { db in
            try db.fetchAll(
                String.self, "SELECT l.name || ':' || r.title FROM reminders AS r JOIN lists AS l ON l.id = r.listID")
        }
        let (count, countCancellable) = observe { db in try db.fetchValue(Int.self, "SELECT count(*) FROM tags") ?? 0 }
        #expect(eventually { names.values.value == [[]] && joined.values.value == [[]] && count.values.value == [0] })
        try pool.write { db in try db.execute("INSERT INTO lists (id, name) VALUES ('L', 'Home')") }
        #expect(eventually { names.values.value == [[], ["Home"]] })
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('r1', 'Milk', 'L')") }
        #expect(eventually { joined.values.value == [[], ["Home:Milk"]] })
        try pool.write { db in try db.execute("INSERT INTO tags (id, name) VALUES ('t', 'x')") }
        #expect(eventually { count.values.value == [0, 1] })
        // A list's reminders go with it (ON DELETE CASCADE): the join sees them go.
        try pool.write { db in try db.execute("DELETE FROM lists WHERE id = 'L'") }
        #expect(eventually { joined.values.value == [[], ["Home:Milk"], []] })
        withExtendedLifetime((namesCancellable, joinedCancellable, countCancellable)) {}
    }

    /// Another connection of this process, then the `sqlite3` shell, write the file.
    @Test func commitsOfAnotherConnectionAndAnotherProcessAreSeen() throws {
        let (told, cancellable) = observe(Self.titles)
        #expect(eventually { told.values.value == [[]] })
        let other = try Database(path: pool.path)
        try other.execute("INSERT INTO reminders (id, title) VALUES ('r1', 'Milk')")
        #expect(eventually { told.values.value == [[], ["Milk"]] })
        let shell = try run("/usr/bin/sqlite3", [pool.path, "INSERT INTO reminders (id, title) VALUES ('r2', 'Tea');"])
        #expect(shell.status == 0, "\(String(decoding: shell.error, as: UTF8.self))")
        #expect(eventually { told.values.value == [[], ["Milk"], ["Milk", "Tea"]] })
        withExtendedLifetime(cancellable) {}
    }

    @Test func aQueryThatThrowsEndsTheObservationWithItsError() async throws {
        struct Broken: Error, Equatable {}
        let runs = Locked(0)
        let observation = ValueObservation { db in
            let run = runs.withLock { count in
                count += 1
                return count
            }
            if run == 2 { throw Broken() }
            return try Self.titles(db)
        }
        var told: [[String]] = []
        await #expect(throws: Broken.self) {
            for try await titles in observation.values(in: pool) {
                told.append(titles)
                try await pool.write { db in
                    try db.execute("INSERT INTO reminders (id, title) VALUES ('r1', 'Milk')")
                }
            }
        }
        #expect(told == [[]])
        // The pool goes on.
        #expect(try await pool.read { db in try Self.titles(db) } == ["Milk"])
    }

    /// Two observations and the app's own commit and rollback hooks on the writer, set before
    /// and after the observations started: each is called.
    @Test func observationsAndTheAppsCommitHookCoexist() throws {
        let commits = Locked(0)
        let rollbacks = Locked(0)
        try pool.writeWithoutTransaction { db in
            db.setCommitHook {
                commits.withLock { $0 += 1 }
                return true
            }
        }
        let (first, firstCancellable) = observe(Self.titles)
        let (second, secondCancellable) = observe { db in try db.fetchValue(Int.self, "SELECT count(*) FROM reminders")
        }
        #expect(eventually { first.values.value.count == 1 && second.values.value.count == 1 })
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r1', 'Milk')") }
        #expect(eventually { first.values.value.count == 2 && second.values.value == [0, 1] })
        #expect(commits.value == 1)
        try pool.writeWithoutTransaction { db in
            db.setCommitHook {
                commits.withLock { $0 += 1 }
                return true
            }
            db.setRollbackHook { rollbacks.withLock { $0 += 1 } }
        }
        try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r2', 'Tea')") }
        #expect(eventually { first.values.value.count == 3 && second.values.value == [0, 1, 2] })
        #expect(commits.value == 2)
        // The app's hooks replaced: the first no longer counts.
        // The app's hook refuses a commit: rolled back, and no observer is told.
        try pool.writeWithoutTransaction { db in db.setCommitHook { false } }
        #expect(throws: DatabaseError.self) {
            try pool.write { db in try db.execute("INSERT INTO reminders (id, title) VALUES ('r3', 'Jam')") }
        }
        #expect(rollbacks.value == 1)
        usleep(200_000)
        #expect(second.values.value == [0, 1, 2])
        withExtendedLifetime((firstCancellable, secondCancellable)) {}
    }
}
