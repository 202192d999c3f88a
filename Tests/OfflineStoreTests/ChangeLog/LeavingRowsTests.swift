import Foundation
import OfflineStore
import SyncProtocol
import Synchronization
import Testing

@testable import OfflineStoreChangeLog

/// Lists and the reminders on them, as a scoped pull names the rows that left the device's scope.
private enum ListsPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [V1.self]
    static let stages: [MigrationStage] = []

    enum V1: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [List.self, Reminder.self]
    }

    enum List: Model {
        static let tableDefinition = TableDefinition("lists", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text)
        }
    }

    enum Reminder: Model {
        static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text)
            Column("listID", .text).references("lists", "id", onDelete: .cascade)
        }
    }
}

/// Rows a pull names as having left the scope (Protocol/README.md §17.3): removed with their
/// versions and what the stash holds of them, no delete queued, this store's unpushed changes of
/// them handed over, and a child that stays in the scope kept in the stash, never deleted.
@Suite("Rows leaving the scope")
struct LeavingRowsTests {
    let directory: TemporaryDirectory
    let db: Database
    let log: ChangeLog
    private let siteID = Data(repeating: 7, count: 16)
    private let dated = Int64(Date().timeIntervalSince1970 * 1000) - 60_000

    init() throws {
        directory = try TemporaryDirectory()
        db = try Database(path: directory.path("store.sqlite"))
        log = try ChangeLog.open(db, migrator: try Migrator(plan: ListsPlan.self))
    }

    /// An insert from another site, dated a minute ago plus `counter`.
    private func insert(_ table: String, _ id: String, _ columns: [String: DatabaseValue], counter: Int64)
        -> IncomingChange
    {
        IncomingChange(
            table: table, primaryKey: ["id": .text(id)], operation: .insert,
            columns: columns.merging(["id": .text(id)]) { $1 },
            clock: ChangeClock(validMilliseconds: dated, counter: counter), siteID: siteID)
    }

    /// Groceries with Milk and Eggs on it, from another site.
    private var groceries: [IncomingChange] {
        [
            insert("lists", "L", ["name": .text("Groceries")], counter: 1),
            insert("reminders", "R1", ["title": .text("Milk"), "listID": .text("L")], counter: 2),
            insert("reminders", "R2", ["title": .text("Eggs"), "listID": .text("L")], counter: 3),
        ]
    }

    /// The unpushed changes handed over, as `table:operation:columns`.
    private final class Kept: Sendable {
        let entries = Mutex<[String]>([])
    }

    private func leaving(_ rows: [(String, String)], kept: Kept? = nil) -> LeavingRows {
        LeavingRows(rows: rows.map { LeavingRow(table: $0.0, primaryKey: ["id": .text($0.1)]) }) { entry, _ in
            let described = "\(entry.table):\(entry.operation.rawValue):\(entry.columns.sorted())"
            kept?.entries.withLock { $0.append(described) }
        }
    }

    private func ids(_ table: String) throws -> [String] {
        try db.fetchAll(String.self, SQL(sql: "SELECT id FROM \(quoteIdentifier(table)) ORDER BY id"))
    }

    /// The log's versions of rows (the entry holding the queue's newest place is of no row).
    private func loggedEntries() throws -> Int {
        try db.fetchValue(
            Int.self,
            "SELECT count(*) FROM ostore_meta.ostore_changes WHERE tableID IN (SELECT id FROM ostore_meta.ostore_tables)"
        ) ?? -1
    }

    @Test func rowsThatLeaveGoWithTheirVersionsAndComeBackWhole() throws {
        _ = try log.apply(groceries, to: db)
        #expect(try loggedEntries() > 0)
        let outcome = try log.apply(
            log.prepare([], leaving: leaving([("reminders", "R1"), ("reminders", "R2"), ("lists", "L")])), to: db)
        #expect(outcome.removed == 3)
        #expect(try ids("lists").isEmpty && ids("reminders").isEmpty)
        #expect(try loggedEntries() == 0)
        #expect(try log.pendingCount(db) == 0)
        // The same versions again, as the server gives rows coming in: applied, not superseded by
        // what the store held of them before.
        let back = try log.apply(groceries, to: db)
        #expect(back.superseded == 0)
        #expect(try ids("lists") == ["L"] && ids("reminders") == ["R1", "R2"])
        #expect(try log.pendingCount(db) == 0)
    }

    @Test func thisStoresUnpushedChangesOfALeavingRowAreHandedOverAndLeaveTheQueue() throws {
        _ = try log.apply(groceries, to: db)
        try db.execute("UPDATE reminders SET title = 'Oat milk' WHERE id = 'R1'")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R3', 'Bread', 'L')")
        try db.execute("INSERT INTO lists (id, name) VALUES ('H', 'Home')")
        #expect(try log.pendingCount(db) == 3)
        let kept = Kept()
        let rows = [("reminders", "R1"), ("reminders", "R2"), ("reminders", "R3"), ("lists", "L")]
        _ = try log.apply(log.prepare([], leaving: leaving(rows, kept: kept)), to: db)
        #expect(
            kept.entries.withLock { $0 } == [
                "reminders:update:[\"title\"]", "reminders:insert:[\"id\", \"listID\", \"title\"]",
            ])
        // Home is not named: it stays, queued.
        #expect(try log.pendingChanges(db).map(\.primaryKey) == [["id": .text("H")]])
        #expect(try ids("lists") == ["H"] && ids("reminders").isEmpty)
    }

    /// Regression: a leaving row whose entry held the log's newest place took the place with it, so
    /// the next local change took a place the push had passed (it was never pushed) and the coverage
    /// watermark was ahead of the log (every row rescanned at the next open).
    @Test func aLeavingRowKeepsTheQueuesNewestPlace() throws {
        _ = try log.apply(groceries, to: db)
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R3', 'Bread', 'L')")
        let pushed = try #require(try log.pendingChanges(db).last?.sequence)
        try log.markPushed(db, upTo: pushed)
        let rows = [("reminders", "R1"), ("reminders", "R2"), ("reminders", "R3"), ("lists", "L")]
        _ = try log.apply(log.prepare([], leaving: leaving(rows)), to: db)
        #expect(try log.pendingCount(db) == 0)
        try db.execute("INSERT INTO lists (id, name) VALUES ('H', 'Home')")
        let queued = try log.pendingChanges(db)
        #expect(queued.map(\.primaryKey) == [["id": .text("H")]])
        #expect(queued.allSatisfy { $0.sequence > pushed })
        #expect(try log.reconcileCoverage(db).rescanned == false)
        #expect(try ids("lists") == ["H"])
    }

    @Test func aChildThatStaysInTheScopeWaitsInTheStashForItsParent() throws {
        _ = try log.apply(groceries, to: db)
        let outcome = try log.apply(log.prepare([], leaving: leaving([("lists", "L")])), to: db)
        #expect(outcome.removed == 1)
        #expect(try ids("lists").isEmpty && ids("reminders").isEmpty)
        #expect(try log.stashedCount(db) == 2)
        // Not orphans of a deleted parent: no delete of them is queued.
        #expect(try log.pendingCount(db) == 0)
        #expect(try db.fetchAll("PRAGMA foreign_key_check").isEmpty)
        _ = try log.apply([groceries[0]], to: db)
        #expect(try ids("reminders") == ["R1", "R2"] && log.stashedCount(db) == 0)
    }

    @Test func aLeavingRowThatWaitsInTheStashIsForgottenThere() throws {
        _ = try log.apply([groceries[1]], to: db)
        #expect(try log.stashedCount(db) == 1)
        let outcome = try log.apply(log.prepare([], leaving: leaving([("reminders", "R1")])), to: db)
        #expect(outcome.removed == 1)
        #expect(try log.stashedCount(db) == 0)
        _ = try log.apply([groceries[0]], to: db)
        #expect(try ids("reminders").isEmpty)
    }

    @Test func aRowThisStoreDoesNotHoldChangesNothing() throws {
        _ = try log.apply(groceries, to: db)
        let outcome = try log.apply(
            log.prepare([], leaving: leaving([("lists", "elsewhere"), ("unknownTable", "X")])), to: db)
        #expect(outcome.removed == 0)
        #expect(try ids("lists") == ["L"] && ids("reminders") == ["R1", "R2"])
    }

    @Test func rowsLeaveBeforeThePagesChangesApply() throws {
        _ = try log.apply(groceries, to: db)
        let work = insert("lists", "W", ["name": .text("Work")], counter: 4)
        let outcome = try log.apply(
            log.prepare([work], leaving: leaving([("reminders", "R1"), ("reminders", "R2"), ("lists", "L")])), to: db)
        #expect(outcome.removed == 3 && outcome.applied == 1)
        #expect(try ids("lists") == ["W"])
    }
}
