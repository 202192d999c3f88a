import Foundation
import OfflineStore
import Testing

// The README's database tour, verbatim between the markers, so the example cannot rot.

// tour:begin
struct TourReminder: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "reminders"
    var id: UUID
    var title: String
    var done: Bool
    var dueAt: Date?
}

func tour(directory: String) async throws -> (titles: [String], count: Int) {
    let pool = try DatabasePool(path: directory + "/reminders.sqlite")
    try await pool.write { db in
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS reminders (
                id BLOB PRIMARY KEY NOT NULL, title TEXT NOT NULL, done INTEGER NOT NULL, dueAt REAL)
            """)
        try TourReminder(id: UUID(), title: "Buy milk", done: false, dueAt: nil).insert(db)
        let title = "Call Bob'); DROP TABLE reminders; --"  // bound as a value, never SQL text
        try db.execute("INSERT INTO reminders (id, title, done) VALUES (\(UUID()), \(title), \(false))")
    }
    do {
        try await pool.write { db in
            let existing = try db.fetchValue(UUID.self, "SELECT id FROM reminders LIMIT 1")
            try db.execute("INSERT INTO reminders (id, title, done) VALUES (\(existing), \("dup"), \(true))")
        }
    } catch DatabaseError.constraintPrimaryKey {
        // the whole write was rolled back
    }
    let open = try await pool.read { db in
        try TourReminder.fetchAll(db, "SELECT * FROM reminders WHERE done = \(false) ORDER BY title")
    }
    let count = try await pool.read { db in
        try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") ?? 0
    }
    return (open.map(\.title), count)
}
// tour:end

@Suite struct ReadmeTourTests {
    @Test func tourRunsAsTheReadmeSays() async throws {
        let directory = try TemporaryDirectory()
        let result = try await tour(directory: directory.url.path)
        #expect(result.titles == ["Buy milk", "Call Bob'); DROP TABLE reminders; --"])
        #expect(result.count == 2)
    }

    /// Every Swift block of the README is a region of a test that compiles and runs it, and
    /// every such region is in the README.
    @Test func readmeShowsOnlyCompiledSwiftVerbatim() throws {
        let problems = try DocumentedCode.differences(
            markdown: "README.md",
            sources: [
                "Tests/OfflineStoreTests/Tools/ReadmeTourTests.swift",
                "Tests/OfflineStoreTests/Tools/ReadmeMigrationTourTests.swift",
                "Tests/SyncClientTests/ReadmeAppTourTests.swift",
            ])
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
    }
}
