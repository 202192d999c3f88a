import Foundation
import OfflineStore
import Testing

private struct Reminder: Decodable, Equatable, FetchableRecord {
    var id: Int64
    var title: String
    var done: Bool
    var note: String?
}

/// Asks for its keys in an order that depends on the row.
private struct Shuffled: Decodable, Equatable, FetchableRecord {
    var id: Int64
    var title: String
    var done: Bool

    enum CodingKeys: String, CodingKey { case id, title, done }
}

// In an extension, so that the memberwise initializer stays.
extension Shuffled {
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if try container.decode(Bool.self, forKey: .done) {
            title = try container.decode(String.self, forKey: .title)
            id = try container.decode(Int64.self, forKey: .id)
        } else {
            id = try container.decode(Int64.self, forKey: .id)
            title = try container.decode(String.self, forKey: .title)
        }
        done = try container.decode(Bool.self, forKey: .done)
    }
}

/// Decodes a second record from the same row between two of its own properties.
private struct WithDetails: Decodable, Equatable, FetchableRecord {
    struct Details: Decodable, Equatable {
        var title: String
        var note: String?
    }

    var id: Int64
    var details: Details
    var done: Bool

    enum CodingKeys: String, CodingKey { case id, done }
}

extension WithDetails {
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
        details = try Details(from: decoder)
        done = try container.decode(Bool.self, forKey: .done)
    }
}

/// One column read by a type of its own: `Part<A>` and `Part<B>` have different coding keys.
private struct Part<Tag>: Decodable, Equatable {
    var id: Int64
}

private enum Tag0 {}
private enum Tag1 {}
private enum Tag2 {}
private enum Tag3 {}
private enum Tag4 {}
private enum Tag5 {}
private enum Tag6 {}
private enum Tag7 {}
private enum Tag8 {}
private enum Tag9 {}

/// More coding-key types on one row than a statement keeps containers for.
private struct ManyParts: Decodable, FetchableRecord {
    var ids: [Int64]

    init(from decoder: any Decoder) throws {
        ids = [
            try Part<Tag0>(from: decoder).id, try Part<Tag1>(from: decoder).id, try Part<Tag2>(from: decoder).id,
            try Part<Tag3>(from: decoder).id, try Part<Tag4>(from: decoder).id, try Part<Tag5>(from: decoder).id,
            try Part<Tag6>(from: decoder).id, try Part<Tag7>(from: decoder).id, try Part<Tag8>(from: decoder).id,
            try Part<Tag9>(from: decoder).id,
        ]
    }
}

/// Keeps its container, which it must not do: reading it later has to fail, not read another row.
private struct KeptContainer: Decodable, FetchableRecord {
    enum CodingKeys: String, CodingKey { case id, title }
    let container: KeyedDecodingContainer<CodingKeys>
    let id: Int64

    init(from decoder: any Decoder) throws {
        container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Int64.self, forKey: .id)
    }
}

@Suite("Decoding records by column name")
struct RecordDecodingTests {
    let db: Database
    private let stored = [
        Reminder(id: 1, title: "Buy milk", done: false, note: nil),
        Reminder(id: 2, title: "Call Ada", done: true, note: "about the trip"),
        Reminder(id: 3, title: "Fix the bike", done: false, note: "ünïcode"),
    ]

    init() throws {
        db = try Database.inMemory()
        try db.execute("CREATE TABLE reminders (id INTEGER PRIMARY KEY, title TEXT, done INTEGER, note TEXT)")
        for reminder in stored {
            try db.execute(
                "INSERT INTO reminders VALUES (\(reminder.id), \(reminder.title), \(reminder.done), \(reminder.note))")
        }
    }

    @Test func columnsInAnotherOrderThanTheProperties() throws {
        for _ in 0..<2 {
            let fetched = try Reminder.fetchAll(db, "SELECT note, done, title, id FROM reminders ORDER BY id")
            #expect(fetched == stored)
        }
    }

    @Test func columnNamesMatchWhateverTheirCase() throws {
        let fetched = try Reminder.fetchAll(
            db, "SELECT id AS ID, title AS Title, done AS dOnE, note AS NOTE FROM reminders ORDER BY id")
        #expect(fetched == stored)
    }

    @Test func anOptionalWithoutAColumnIsNilOnEveryRow() throws {
        let fetched = try Reminder.fetchAll(db, "SELECT id, title, done FROM reminders ORDER BY id")
        #expect(fetched == stored.map { Reminder(id: $0.id, title: $0.title, done: $0.done, note: nil) })
    }

    @Test func theSameQueryAfterATableRebuildReadsTheColumnsWhereTheyMoved() throws {
        let sql: SQL = "SELECT * FROM reminders ORDER BY id"
        #expect(try Reminder.fetchAll(db, sql) == stored)
        try db.executeScript(
            """
            CREATE TABLE rebuilt (note TEXT, done INTEGER, title TEXT, id INTEGER PRIMARY KEY);
            INSERT INTO rebuilt (note, done, title, id) SELECT note, done, title, id FROM reminders;
            DROP TABLE reminders;
            ALTER TABLE rebuilt RENAME TO reminders;
            """)
        #expect(try Reminder.fetchAll(db, sql) == stored)
    }

    @Test func keysAskedForInAnotherOrderOnSomeRows() throws {
        let fetched = try Shuffled.fetchAll(db, "SELECT id, title, done FROM reminders ORDER BY id")
        #expect(fetched == stored.map { Shuffled(id: $0.id, title: $0.title, done: $0.done) })
    }

    @Test func aRecordDecodedInsideAnotherFromTheSameRow() throws {
        let fetched = try WithDetails.fetchAll(db, "SELECT * FROM reminders ORDER BY id")
        let expected = stored.map {
            WithDetails(id: $0.id, details: .init(title: $0.title, note: $0.note), done: $0.done)
        }
        #expect(fetched == expected)
    }

    @Test func moreKeyTypesOnOneRowThanAStatementKeeps() throws {
        let fetched = try ManyParts.fetchAll(db, "SELECT id FROM reminders ORDER BY id")
        #expect(fetched.map(\.ids) == stored.map { Array(repeating: $0.id, count: 10) })
    }

    @Test func aCopiedRowDecodesToo() throws {
        let row = try #require(try db.fetchOne("SELECT title, id, note, done FROM reminders WHERE id = \(2)"))
        #expect(try Reminder(row: row) == stored[1])
        #expect(try Reminder(from: RowDecoder(row: row)) == stored[1])
    }

    @Test func aContainerKeptAfterItsRowFailsToRead() throws {
        let kept = try KeptContainer.fetchAll(db, "SELECT id, title FROM reminders ORDER BY id")
        #expect(kept.map(\.id) == [1, 2, 3])
        let error = try #require(throws: DatabaseError.self) {
            _ = try kept[0].container.decode(String.self, forKey: .title)
        }
        #expect(error.resultCode == .misuse)
    }

    @Test func aContainerKeptAfterItsStatementWentAwayFailsToRead() throws {
        let kept = try KeptContainer.fetchAll(db, "SELECT id, title FROM reminders ORDER BY id")
        try db.close()
        // Another statement may now decode with the memory the kept container points at.
        let other = try Database.inMemory()
        try other.execute("CREATE TABLE reminders (id INTEGER PRIMARY KEY, title TEXT)")
        try other.execute("INSERT INTO reminders VALUES (\(7), \("elsewhere"))")
        let cursor = try KeptContainer.fetchCursor(other, "SELECT id, title FROM reminders")
        #expect(try cursor.next()?.id == 7)

        let error = try #require(throws: DatabaseError.self) {
            _ = try kept[0].container.decode(String.self, forKey: .title)
        }
        #expect(error.resultCode == .misuse)
        #expect(!kept[0].container.contains(.title))
    }
}
