import Foundation
import OfflineStore
import Testing

/// A record using every kind of property the encoder and decoder handle.
private struct TodoItem: Codable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "tasks"

    struct Size: Codable, Equatable {
        var width: Int
        var height: Int
    }

    var id: Int64
    var title: String
    var note: String?
    var tags: [String]
    var size: Size
    var dueDate: Date?
    var createdAt: Date
    var uuid: UUID
    var owner: UUID?
    var priority: Priority
    var done: Bool
    var score: Double
    var attachment: Data
}

/// A record read by hand, by column index and name.
private struct ItemSummary: FetchableRecord {
    var id: Int64
    var title: String
    var tagCount: Int

    init(row: Row) throws {
        id = try row.decode(at: 0)
        title = try row["title"]
        tagCount = try row.decode(Int.self, column: "tagCount")
    }
}

/// A record written by hand into the container, without Codable.
private struct Label: PersistableRecord {
    static let databaseTableName = "labels"
    var name: String
    var color: Int?

    func encode(to container: inout PersistenceContainer) throws {
        container.set("name", to: name)
        container.set("color", to: color)
    }
}

/// A record whose column list depends on its values.
private struct SparseLabel: PersistableRecord {
    static let databaseTableName = "labels"
    var name: String
    var color: Int?

    func encode(to container: inout PersistenceContainer) throws {
        container.set("name", to: name)
        if let color { container.set("color", to: color) }
    }
}

/// Another record type writing the same table.
private struct NamedLabel: Codable, PersistableRecord {
    static let databaseTableName = "labels"
    var name: String
}

/// A record that fails half-way through encoding.
private struct FailingLabel: PersistableRecord {
    static let databaseTableName = "labels"
    struct Refused: Error {}
    var name: String

    func encode(to container: inout PersistenceContainer) throws {
        container.set("name", to: name)
        throw Refused()
    }
}

@Suite("Codable records")
struct CodableRecordTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.execute(
            """
            CREATE TABLE tasks (
                id INTEGER PRIMARY KEY, title TEXT NOT NULL, note TEXT, tags TEXT NOT NULL, size TEXT NOT NULL,
                dueDate REAL, createdAt REAL NOT NULL, uuid BLOB NOT NULL, owner BLOB, priority INTEGER NOT NULL,
                done INTEGER NOT NULL, score REAL NOT NULL, attachment BLOB NOT NULL)
            """)
        try db.execute("CREATE TABLE labels (name TEXT PRIMARY KEY, color INTEGER)")
    }

    private static func makeItem(id: Int64, title: String = "Write tests") throws -> TodoItem {
        TodoItem(
            id: id, title: title, note: nil, tags: ["swift", "sqlite", "ünïcode"], size: .init(width: 3, height: 4),
            dueDate: nil, createdAt: Date(timeIntervalSince1970: 1_700_000_000.25),
            uuid: try #require(UUID(uuidString: "6BA7B810-9DAD-11D1-80B4-00C04FD430C8")), owner: nil,
            priority: .high, done: false, score: 0.5, attachment: Data([0, 1, 0]))
    }

    @Test func insertThenFetchAll() throws {
        var first = try Self.makeItem(id: 1)
        first.note = "with a note"
        first.owner = UUID()
        first.dueDate = Date(timeIntervalSince1970: 1_800_000_000)
        first.done = true
        let second = try Self.makeItem(id: 2, title: "Second")
        try first.insert(db)
        try second.insert(db)

        let fetched = try TodoItem.fetchAll(db, "SELECT * FROM tasks ORDER BY id")
        #expect(fetched == [first, second])
    }

    @Test func fetchOneAndCursor() throws {
        let item = try Self.makeItem(id: 5)
        try item.insert(db)
        #expect(try TodoItem.fetchOne(db, "SELECT * FROM tasks WHERE id = \(5)") == item)
        #expect(try TodoItem.fetchOne(db, "SELECT * FROM tasks WHERE id = \(6)") == nil)

        let cursor = try TodoItem.fetchCursor(db, "SELECT * FROM tasks")
        #expect(try cursor.next() == item)
        #expect(try cursor.next() == nil)
    }

    @Test func storedRepresentation() throws {
        try Self.makeItem(id: 1).insert(db)
        let cursor = try db.fetchCursor(
            """
            SELECT typeof(note), typeof(dueDate), typeof(owner), tags, typeof(tags), size, typeof(createdAt),
                   createdAt, typeof(uuid), length(uuid), hex(uuid), priority, done, hex(attachment)
            FROM tasks
            """)
        let row = try #require(try cursor.next())
        let values = try row.values()
        let expected: [DatabaseValue] = [
            // nil optionals are written as NULL, not left out.
            .text("null"), .text("null"), .text("null"),
            // Nested values are JSON text, keys sorted.
            .text(#"["swift","sqlite","ünïcode"]"#), .text("text"), .text(#"{"height":4,"width":3}"#),
            // Dates are REAL Unix seconds, UUIDs 16-byte BLOBs, enums their raw value, Bool 0/1.
            .text("real"), .real(1_700_000_000.25), .text("blob"), .integer(16),
            .text("6BA7B8109DAD11D180B400C04FD430C8"), .integer(3), .integer(0), .text("000100"),
        ]
        #expect(values == expected)
    }

    @Test func nilOptionalsRoundTripAsNull() throws {
        let item = try Self.makeItem(id: 9)
        try item.insert(db)
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM tasks WHERE note IS NULL AND owner IS NULL") == 1)
        let fetched = try #require(try TodoItem.fetchAll(db, "SELECT * FROM tasks").first)
        #expect(fetched.note == nil)
        #expect(fetched.owner == nil)
        #expect(fetched.dueDate == nil)
    }

    @Test func dateAndUUIDProperties() throws {
        var item = try Self.makeItem(id: 3)
        let now = Date()
        let owner = UUID()
        item.createdAt = now
        item.owner = owner
        try item.insert(db)
        let fetched = try #require(try TodoItem.fetchAll(db, "SELECT * FROM tasks").first)
        #expect(abs(fetched.createdAt.timeIntervalSince(now)) < 1e-6)
        #expect(fetched.owner == owner)
        #expect(fetched.uuid == item.uuid)
        // The UUID is queryable as the bound value.
        #expect(try db.scalar(Int.self, "SELECT id FROM tasks WHERE owner = \(owner)") == 3)
    }

    @Test func decodesNestedValuesWrittenBySQL() throws {
        try db.execute(
            """
            INSERT INTO tasks VALUES (
                7, 'by hand', NULL, json_array('a', 'b'), json_object('width', 1, 'height', 2), NULL, 0,
                \(UUID()), NULL, 1, 1, 2.5, x'')
            """)
        let item = try #require(try TodoItem.fetchAll(db, "SELECT * FROM tasks").first)
        #expect(item.tags == ["a", "b"])
        #expect(item.size == .init(width: 1, height: 2))
        #expect(item.priority == .low)
        #expect(item.done)
        #expect(item.attachment == Data())
        #expect(item.createdAt == Date(timeIntervalSince1970: 0))
    }

    @Test func handWrittenInitFromRow() throws {
        try Self.makeItem(id: 1, title: "One").insert(db)
        try Self.makeItem(id: 2, title: "Two").insert(db)
        let summaries = try ItemSummary.fetchAll(
            db, "SELECT id, title, json_array_length(tags) AS tagCount FROM tasks ORDER BY id DESC")
        #expect(summaries.map(\.id) == [2, 1])
        #expect(summaries.map(\.title) == ["Two", "One"])
        #expect(summaries.map(\.tagCount) == [3, 3])
    }

    @Test func handWrittenPersistenceContainer() throws {
        try Label(name: "red", color: 0xFF0000).insert(db)
        try Label(name: "none", color: nil).insert(db)
        let rows = try db.fetchCursor("SELECT name, color FROM labels ORDER BY name").toArray().count
        #expect(rows == 2)
        #expect(try db.scalar(Int.self, "SELECT color FROM labels WHERE name = 'red'") == 0xFF0000)
        #expect(try db.scalar(String.self, "SELECT typeof(color) FROM labels WHERE name = 'none'") == "null")

        var container = PersistenceContainer()
        try Label(name: "x", color: 1).encode(to: &container)
        #expect(container.columns == ["name", "color"])
        #expect(container["color"] == .integer(1))
        #expect(container["missing"] == nil)
    }

    @Test func recordsWithVaryingColumnsGoToTheRightColumns() throws {
        // Alternate column lists, record types and conflict rules on one table: every row lands as written.
        try SparseLabel(name: "a", color: 1).insert(db)
        try SparseLabel(name: "b", color: nil).insert(db)
        try NamedLabel(name: "c").insert(db)
        try SparseLabel(name: "d", color: 4).insert(db)
        try Label(name: "e", color: 5).insert(db)
        try SparseLabel(name: "d", color: 40).insert(db, onConflict: .replace)
        try SparseLabel(name: "d", color: 400).insert(db, onConflict: .ignore)
        try NamedLabel(name: "f").insert(db)
        try SparseLabel(name: "g", color: 7).insert(db)

        let cursor = try db.fetchCursor("SELECT name, color FROM labels ORDER BY name")
        var stored: [String] = []
        while let row = try cursor.next() {
            stored.append("\(try row.decode(String.self, at: 0))=\(try row.decode(Int?.self, at: 1) ?? -1)")
        }
        #expect(stored == ["a=1", "b=-1", "c=-1", "d=40", "e=5", "f=-1", "g=7"])
    }

    @Test func failedEncodingLeavesNothingBehind() throws {
        #expect(throws: FailingLabel.Refused.self) { try FailingLabel(name: "half").insert(db) }
        // The next record starts from an empty container: no column of the failed one leaks into it.
        try SparseLabel(name: "whole", color: nil).insert(db)
        #expect(try db.count("labels") == 1)
        #expect(try db.scalar(String.self, "SELECT name FROM labels") == "whole")

        let error = try #require(throws: DatabaseError.self) {
            try Label(name: "whole", color: 1).insert(db)
        }
        #expect(error.resultCode == .constraintPrimaryKey)
        try Label(name: "next", color: 2).insert(db)
        #expect(try db.scalar(Int.self, "SELECT color FROM labels WHERE name = 'next'") == 2)
    }

    @Test func manyInsertsReuseOneStatement() throws {
        try db.transaction { db in
            for id in 1...1_000 {
                try Self.makeItem(id: Int64(id), title: "item \(id)").insert(db)
            }
        }
        #expect(try db.count("tasks") == 1_000)
        let titles = try db.fetchAll(String.self, "SELECT title FROM tasks WHERE id IN (\(list: [1, 500, 1_000]))")
        #expect(titles.sorted() == ["item 1", "item 1000", "item 500"])
    }

    @Test func missingColumnErrorMentionsTheColumn() throws {
        try Self.makeItem(id: 1).insert(db)
        let error = try #require(throws: (any Error).self) {
            _ = try TodoItem.fetchAll(db, "SELECT id, title, note FROM tasks")
        }
        // `note` is optional and may be missing; `tags` is the first required property not selected.
        #expect("\(error)".contains("'tags'"), "\(error)")
        #expect("\(error)".contains("id, title, note"), "\(error)")
    }

    @Test func wrongStoredTypeErrorMentionsTheColumn() throws {
        try Self.makeItem(id: 1).insert(db)
        try db.execute("UPDATE tasks SET priority = 99")
        let error = try #require(throws: DatabaseError.self) { _ = try TodoItem.fetchAll(db, "SELECT * FROM tasks") }
        #expect(error.resultCode == .mismatch)
        #expect(error.message.contains("priority"), "\(error)")

        try db.execute("UPDATE tasks SET priority = 1, tags = 'not json'")
        let json = try #require(throws: DatabaseError.self) { _ = try TodoItem.fetchAll(db, "SELECT * FROM tasks") }
        #expect(json.message.contains("tags"), "\(json)")
    }

    @Test func insertConflicts() throws {
        try Self.makeItem(id: 1, title: "original").insert(db)
        let duplicate = try Self.makeItem(id: 1, title: "duplicate")

        let error = try #require(throws: DatabaseError.self) { try duplicate.insert(db) }
        #expect(error.resultCode == .constraintPrimaryKey)

        try duplicate.insert(db, onConflict: .ignore)
        #expect(try db.scalar(String.self, "SELECT title FROM tasks WHERE id = 1") == "original")
        try duplicate.insert(db, onConflict: .replace)
        #expect(try db.scalar(String.self, "SELECT title FROM tasks WHERE id = 1") == "duplicate")
        #expect(try db.count("tasks") == 1)
    }

    @Test func insertIntoMissingTableThrows() throws {
        struct Ghost: Codable, PersistableRecord {
            static let databaseTableName = "ghosts"
            var name: String
        }
        let error = try #require(throws: DatabaseError.self) { try Ghost(name: "boo").insert(db) }
        #expect(error.message.contains("no such table"))
        #expect(error.sql?.contains(#"INTO "ghosts""#) == true)
    }
}
