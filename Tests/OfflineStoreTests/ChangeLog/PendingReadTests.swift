import Foundation
import OfflineStore
import Testing

@testable import OfflineStoreChangeLog

/// Notes keyed by one text column (read with their rows by one statement when a batch holds only
/// them) and shelves keyed by two columns (always read row by row).
private enum PendingReadPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [V1.self]
    static let stages: [MigrationStage] = []

    enum V1: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [Note.self, Shelf.self]
    }

    enum Note: Model {
        static let tableDefinition = TableDefinition("notes") {
            Column("id", .text).primaryKey()
            Column("title", .text)
            Column("count", .integer)
        }
    }

    enum Shelf: Model {
        static let tableDefinition = TableDefinition("shelves") {
            Column("room", .text).notNull()
            Column("number", .text).notNull()
            Column("label", .text)
            PrimaryKey("room", "number")
        }
    }
}

/// The queue read in batches of any size gives the changes one read of the whole queue gives:
/// batches of one table with a one-column key read the rows in the same statement as the entries,
/// batches of several tables (or a composite key) read them row by row, and both pass over
/// entries whose row is gone and go on past them to fill the batch.
@Suite struct PendingReadTests {
    @Test func batchesOfEverySizeGiveTheWholeQueuesChanges() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("store.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: PendingReadPlan.self))
        for index in 1...8 {
            try db.execute(
                sql: "INSERT INTO notes (id, title, count) VALUES (?, ?, ?)",
                arguments: StatementArguments([.text("n\(index)"), .text("note \(index)"), .integer(Int64(index))]))
        }
        try db.execute(sql: "UPDATE notes SET title = 'edited' WHERE id = 'n2'")
        try db.execute(sql: "DELETE FROM notes WHERE id IN ('n3', 'n7', 'n8')")
        try db.execute(sql: "INSERT INTO notes (id, title) VALUES ('gone', 'x')")
        try db.execute(sql: "UPDATE notes SET count = 5 WHERE id = 'gone'")
        try db.execute(sql: "DELETE FROM notes WHERE id = 'gone'")
        try db.execute(sql: "INSERT INTO shelves (room, number, label) VALUES ('hall', '1', 'top')")
        try db.execute(sql: "UPDATE notes SET count = 0 WHERE id = 'n1'")

        let whole = try log.pendingChanges(db, limit: 1_000)
        #expect(whole.count == 12)
        // n1, n2, n4, n5, n6 inserted (n3, n7, n8 and "gone" passed over: their rows are gone), n2's
        // edit, four deletes, the shelf, n1's edit.
        let expected: [PendingChange.Operation] = [
            .insert, .insert, .insert, .insert, .insert, .update, .delete, .delete, .delete, .delete, .insert, .update,
        ]
        #expect(whole.map(\.operation) == expected)
        #expect(whole[1].columns["title"] == .text("edited"))
        #expect(whole[0].columns["count"] == .integer(0))
        for size in 1...13 {
            var batches: [PendingChange] = []
            var after: Int64?
            while true {
                let batch = try log.pendingChanges(db, after: after, limit: size)
                guard let last = batch.last else { break }
                #expect(batch.count <= size)
                batches += batch
                after = last.sequence
            }
            #expect(batches == whole, "batches of \(size)")
        }
    }

    /// Regression (review): a batch of no changes, or fewer, read the whole queue when it was all
    /// of one table (SQLite reads `LIMIT -1` as no limit); it is empty, as it was before.
    @Test func aBatchOfNoChangesIsEmpty() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("store.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: PendingReadPlan.self))
        for index in 1...3 {
            try db.execute(sql: "INSERT INTO notes (id, title) VALUES (?, 'x')", arguments: ["n\(index)"])
        }
        #expect(try log.pendingChanges(db, limit: 0).isEmpty)
        #expect(try log.pendingChanges(db, limit: -1).isEmpty)
        #expect(try log.pendingChanges(db, limit: 3).count == 3)
    }
}
