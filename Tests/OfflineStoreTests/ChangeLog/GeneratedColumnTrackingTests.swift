import Foundation
import OfflineStore
import Testing

@testable import OfflineStoreChangeLog

/// The tracking trigger for generated columns (`update_generated`), which no declared schema of
/// the other tests has: a generated column is never set, so its change is recorded when it differs
/// after an UPDATE of the columns it is computed from; its watermark call comes only after it
/// appended something.
@Suite("Change tracking of generated columns")
struct GeneratedColumnTrackingTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    /// A table with a generated column, tracked with the schema read from the file.
    func open() throws -> Database {
        let db = try Database(path: directory.path("generated.sqlite"))
        try db.execute(
            sql: """
                CREATE TABLE notes (
                    id TEXT NOT NULL PRIMARY KEY, title TEXT NOT NULL,
                    slug TEXT GENERATED ALWAYS AS (lower(title)) VIRTUAL)
                """)
        try Metadatabase.attach(to: db)
        // A live table reads as local-only; this one is synced.
        let synced = try SchemaSnapshot(liveDatabase: db).tables.map { table in
            var table = table
            table.sync = .synced
            return table
        }
        try ChangeTracker.install(
            on: db, schema: SchemaSnapshot(liveTables: synced), clock: HybridLogicalClock(lastIssued: .zero))
        return db
    }

    /// `column key` per journal entry, in append order.
    func journal(_ db: Database) throws -> [String] {
        try db.fetchAll(
            String.self, "SELECT columnName || ' ' || pk FROM ostore_meta.ostore_journal ORDER BY seq")
    }

    func watermark(_ db: Database) throws -> Int64? {
        try db.fetchValue(Int64.self, "SELECT seq FROM main.ostore_log_watermark WHERE id = 1")
    }

    @Test func anUpdateRecordsAGeneratedColumnOnlyWhenItsValueChanged() throws {
        let db = try open()
        try db.execute("INSERT INTO notes (id, title) VALUES ('A', 'Milk')")
        try db.execute("UPDATE notes SET title = 'Bread' WHERE id = 'A'")
        // Same slug: only the title changed.
        try db.execute("UPDATE notes SET title = 'BREAD' WHERE id = 'A'")
        #expect(try journal(db) == [" A", "title A", "slug A", "title A"])
        #expect(try watermark(db) == 4)
        try db.close()
    }

    /// A savepoint whose UPDATE appended nothing, rolled back, then an insert: the insert's
    /// transaction must still write the watermark. Had the generated-column trigger asked for the
    /// watermark after appending nothing, it would have passed the rowid of the connection's last
    /// insert (the first row of `notes`, 1), the ROLLBACK TO would have undone that write, and the
    /// insert's journal entry (rowid 2, past 1) would have looked covered.
    @Test func aSavepointThatAppendedNothingLeavesTheNextRowToWriteTheWatermark() throws {
        let db = try open()
        try db.execute("INSERT INTO notes (id, title) VALUES ('A', 'Milk')")
        #expect(try watermark(db) == 1)
        try db.transaction { db in
            try? db.savepoint { db in
                try db.execute("UPDATE notes SET title = title WHERE id = 'A'")
                throw CancellationError()
            }
            try db.execute("INSERT INTO notes (id, title) VALUES ('B', 'Eggs')")
        }
        #expect(try journal(db) == [" A", " B"])
        #expect(try watermark(db) == 2)
        try db.close()
    }
}
