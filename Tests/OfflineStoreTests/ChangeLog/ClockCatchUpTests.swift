import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

/// A store's clock lives in each process's memory. These tests open one file under two spellings
/// of its path, which gives each connection a clock of its own, as two processes have.
@Suite("The clock across processes")
struct ClockCatchUpTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    /// Opens the store at `path` as the Reminders app does.
    private func open(_ path: String) throws -> (Database, ChangeLog) {
        let db = try Database(path: path)
        return (db, try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self)))
    }

    /// The newest clock logged for the title of reminder `R`.
    private func titleClock(_ db: Database) throws -> Int64? {
        try db.fetchValue(
            Int64.self,
            """
            SELECT max(clock) FROM (
                SELECT clock FROM ostore_meta.ostore_journal WHERE pk = 'R' AND columnName = 'title'
                UNION ALL SELECT clock FROM ostore_meta.ostore_changes WHERE pk = 'R' AND columnName = 'title')
            """)
    }

    @Test func aWriteOrdersAfterAClockAnotherProcessWrote() throws {
        let path = directory.path("store.sqlite")
        let (app, _) = try open(path)
        let (other, otherLog) = try open(directory.path(".") + "/store.sqlite")
        try app.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try app.execute("INSERT INTO reminders (id, title, listID) VALUES ('R', 'milk', 'L')")

        // The other process's clock runs a minute ahead (it pulled a fast device's change).
        let aMinuteAhead = ChangeClock(
            validMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 60_000, counter: 0)
        try otherLog.clock.receive(aMinuteAhead)
        try other.execute("UPDATE reminders SET title = 'oat milk' WHERE id = 'R'")
        let othersClock = try #require(try titleClock(other))
        #expect(othersClock > aMinuteAhead.packed)

        try app.execute("UPDATE reminders SET title = 'almond milk' WHERE id = 'R'")
        #expect(try titleClock(app) ?? 0 > othersClock)
        try other.close()
        try app.close()
    }

    /// The clock keeps a statement prepared for catching up; closing the connection finalizes it,
    /// or `sqlite3_close_v2` would keep the files open until the process ends.
    @Test func closingAStoreThatIssuedClocksReleasesItsFiles() throws {
        let path = directory.path("store.sqlite")
        func openFiles() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").filter { descriptor in
                let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor)
                return target?.hasPrefix(path) == true
            }.count
        }
        for round in 0..<5 {
            let (db, _) = try open(path)
            try db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L\(round)"), 'Home')")
            try db.close()
            #expect(try openFiles() == 0, "round \(round)")
        }
    }
}
