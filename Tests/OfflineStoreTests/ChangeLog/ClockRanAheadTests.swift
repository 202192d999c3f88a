import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import Testing

/// A device whose wall clock ran ahead stamped its changes, and every later one (its clock never
/// goes back), beyond what a server takes. These tests write such stamps into the log as that
/// clock would have, a day ahead of now.
@Suite("Changes stamped while the clock ran ahead")
struct ClockRanAheadTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    private func open(_ path: String) throws -> (Database, ChangeLog) {
        let db = try Database(path: path)
        return (db, try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self)))
    }

    private struct Entry: Equatable {
        var seq: Int64
        var key: String
        var column: String
        var clock: Int64
    }

    /// The keyed log (after a fold), in queue order.
    private func entries(_ db: Database, _ log: ChangeLog) throws -> [Entry] {
        try log.foldJournal(db)
        return try db.fetchAll("SELECT seq, pk, columnName, clock FROM ostore_meta.ostore_changes ORDER BY seq").map {
            Entry(
                seq: try $0.decode(at: 0), key: try $0.decode(at: 1), column: try $0.decode(at: 2),
                clock: try $0.decode(at: 3))
        }
    }

    /// Stamps the local entries from `seq` on a day ahead, one apart in queue order, and the
    /// store's last clock past them, as a clock running a day ahead would have.
    private func stampADayAhead(_ db: Database, _ log: ChangeLog, from seq: Int64) throws {
        try log.foldJournal(db)
        let aDayAhead = (Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000) << 16
        try db.execute(
            "UPDATE ostore_meta.ostore_changes SET clock = \(aDayAhead) + seq WHERE site = 0 AND seq >= \(seq)")
        try db.execute("UPDATE ostore_meta.ostore_store SET lastClock = \(aDayAhead) + (1 << 20)")
    }

    private func lastClock(_ db: Database) throws -> Int64 {
        try db.fetchValue(Int64.self, "SELECT lastClock FROM ostore_meta.ostore_store") ?? 0
    }

    @Test func localChangesStampedAheadAreStampedAgainAndQueuedToBePushed() throws {
        let (db, log) = try open(directory.path("store.sqlite"))
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L1', 'Home')")
        let firstAhead = try #require(try entries(db, log).last?.seq) + 1
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L2', 'Work')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R1', 'milk', 'L1')")
        try db.execute("UPDATE remindersLists SET name = 'Office' WHERE id = 'L2'")
        let before = try entries(db, log)
        try stampADayAhead(db, log, from: firstAhead)
        // The first change stamped ahead was pushed and refused: kept with the server's reason and
        // taken off the queue, as the sync engine does; another refusal, for another reason.
        try log.recordRefusedOutgoing(
            RefusedOutgoingChangeRecord(
                refusedAt: Date(), code: "clock_out_of_range", reason: "a day ahead",
                change: #"{"table":"remindersLists","seq":\#(firstAhead)}"#), db)
        try log.recordRefusedOutgoing(
            RefusedOutgoingChangeRecord(
                refusedAt: Date(), code: "invalid_change", reason: "something else",
                change: #"{"table":"remindersLists","seq":\#(firstAhead + 1)}"#), db)
        try log.markPushed(db, upTo: firstAhead)
        let pendingBefore = try log.pendingCount(db)

        let untouched = before.filter { $0.seq < firstAhead }
        let ahead = before.filter { $0.seq >= firstAhead }
        #expect(try log.restampClocksAhead(db) == ahead.count)

        let after = try entries(db, log)
        let bound = log.clock.driftBound.packed
        // What was stamped right is as it was; what was stamped ahead keeps its order, now after
        // everything else in the queue, with clocks one apart within the bound and after every
        // clock stamped right.
        #expect(Array(after.prefix(untouched.count)) == untouched)
        let restamped = Array(after.dropFirst(untouched.count))
        #expect(restamped.map { [$0.key, $0.column] } == ahead.map { [$0.key, $0.column] })
        #expect(restamped.first.map { $0.seq > before.last!.seq } == true)
        #expect(zip(restamped, restamped.dropFirst()).allSatisfy { $1.clock == $0.clock + 1 })
        #expect(restamped.allSatisfy { $0.clock <= bound && $0.clock > untouched.last!.clock })
        // Queued again, the refused one too; its refusal is gone, the other kept.
        #expect(try log.pendingCount(db) == pendingBefore + 1)
        #expect(try log.refusedOutgoingChanges(db).map(\.code) == ["invalid_change"])
        #expect(try lastClock(db) == restamped.last?.clock)

        // A later write orders after them, within the bound.
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L3', 'Garden')")
        let newest = try #require(try entries(db, log).last)
        #expect(
            newest.key == "L3" && newest.clock > restamped.last!.clock && newest.clock <= log.clock.driftBound.packed)
        #expect(try log.restampClocksAhead(db) == 0)
        try db.close()
    }

    @Test func openingAStoreWhoseClockRanAheadStampsItsChangesAgain() throws {
        let path = directory.path("store.sqlite")
        let (db, log) = try open(path)
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L1', 'Home')")
        try stampADayAhead(db, log, from: 0)
        try db.close()

        let (reopened, reopenedLog) = try open(path)
        let bound = reopenedLog.clock.driftBound.packed
        #expect(try entries(reopened, reopenedLog).allSatisfy { $0.clock <= bound })
        #expect(try lastClock(reopened) <= bound && reopenedLog.clock.lastIssued.packed <= bound)
        try reopened.close()
    }

    /// Two spellings of one path give two clocks, as two processes of one store have (the app and
    /// its sync daemon): the one that did not re-stamp follows the files back.
    @Test func anotherProcessWhoseClockRanAheadFollowsTheFilesBack() throws {
        let path = directory.path("store.sqlite")
        let (app, appLog) = try open(path)
        let (daemon, daemonLog) = try open(directory.path(".") + "/store.sqlite")
        try app.execute("INSERT INTO remindersLists (id, name) VALUES ('L1', 'Home')")
        try stampADayAhead(daemon, daemonLog, from: 0)
        let bound = appLog.clock.driftBound.packed
        // The app writes on from the newest clock the files hold: a day ahead.
        try app.execute("INSERT INTO remindersLists (id, name) VALUES ('L2', 'Work')")
        #expect(try entries(app, appLog).last.map { $0.key == "L2" && $0.clock > bound } == true)

        #expect(try daemonLog.restampClocksAhead(daemon) == 2)
        let restamped = try #require(try entries(daemon, daemonLog).last?.clock)
        #expect(restamped <= daemonLog.clock.driftBound.packed)

        try app.execute("INSERT INTO remindersLists (id, name) VALUES ('L3', 'Garden')")
        let newest = try #require(try entries(app, appLog).last)
        #expect(newest.key == "L3" && newest.clock > restamped && newest.clock <= appLog.clock.driftBound.packed)
        try daemon.close()
        try app.close()
    }
}
