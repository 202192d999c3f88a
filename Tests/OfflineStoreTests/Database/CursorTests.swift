import Foundation
import OfflineStore
import Testing

@Suite("Cursors and fetching")
struct CursorTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.execute("CREATE TABLE numbers (id INTEGER PRIMARY KEY, square INTEGER)")
        try db.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
            INSERT INTO numbers SELECT i, i * i FROM n
            """)
    }

    /// A SQL function that counts its calls: it shows how many rows SQLite has actually produced.
    func addRowCounter() throws -> Locked<Int> {
        let produced = Locked(0)
        try db.add(
            function: DatabaseFunction("produced", argumentCount: 1) { arguments in
                produced.withLock { $0 += 1 }
                return arguments[0]
            })
        return produced
    }

    @Test func rowsAreStreamedOneAtATime() throws {
        let produced = try addRowCounter()
        let cursor = try db.fetchCursor("SELECT produced(id), square FROM numbers ORDER BY id")
        #expect(produced.value == 0)

        var read = 0
        var mismatches: [String] = []
        var sum: Int64 = 0
        while let row = try cursor.next() {
            read += 1
            let id = try row.decode(Int.self, at: 0)
            let square = try row.decode(Int64.self, at: 1)
            sum &+= square
            if id != read || square != Int64(read * read) { mismatches.append("row \(read): \(id), \(square)") }
            // Only the rows asked for so far have been computed: nothing was read ahead.
            if produced.value != read { mismatches.append("after \(read) rows, \(produced.value) were produced") }
        }
        #expect(read == 10_000)
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        #expect(sum == (1...10_000).reduce(Int64(0)) { $0 + Int64($1 * $1) })
        #expect(try cursor.next() == nil)
        #expect(try cursor.next() == nil)
        #expect(produced.value == 10_000)
    }

    @Test func valueAndRecordCursorsStreamToo() throws {
        let produced = try addRowCounter()
        let values = try db.fetchCursor(Int.self, "SELECT produced(id) FROM numbers ORDER BY id")
        #expect(try values.next() == 1)
        #expect(try values.next() == 2)
        #expect(produced.value == 2)

        struct Square: FetchableRecord {
            var value: Int
            init(row: Row) throws { value = try row.decode(at: 0) }
        }
        let records = try Square.fetchCursor(db, "SELECT produced(square) FROM numbers WHERE id > \(9_998)")
        #expect(try records.next()?.value == 9_999 * 9_999)
        #expect(try records.next()?.value == 10_000 * 10_000)
        #expect(try records.next() == nil)
    }

    @Test func breakingEarlyLeavesTheStatementReusable() throws {
        let sql: SQL = "SELECT id FROM numbers WHERE id <= \(5) ORDER BY id"
        let statement = try db.cachedStatement(sql.text)
        do {
            let cursor = try db.fetchCursor(sql)
            var seen: [Int] = []
            while let row = try cursor.next() {
                seen.append(try row.decode(Int.self, at: 0))
                if seen.count == 2 { break }
            }
            #expect(seen == [1, 2])
            // While this cursor is open, the cache hands out another statement for the same SQL.
            let other = try db.cachedStatement(sql.text)
            #expect(other !== statement)
            #expect(try db.fetchAll(Int.self, sql) == [1, 2, 3, 4, 5])
            withExtendedLifetime(cursor) {}
        }
        // The abandoned cursor reset its statement: the cached one is handed out again and starts over.
        #expect(try db.cachedStatement(sql.text) === statement)
        #expect(try db.fetchAll(Int.self, sql) == [1, 2, 3, 4, 5])
        let again = try db.fetchCursor(sql)
        #expect(try again.next()?.decode(Int.self, at: 0) == 1)
    }

    @Test func nestedCursorsOverTheSameSQL() throws {
        let sql: SQL = "SELECT id FROM numbers WHERE id <= \(3) ORDER BY id"
        var pairs: [[Int]] = []
        let outer = try db.fetchCursor(Int.self, sql)
        while let a = try outer.next() {
            let inner = try db.fetchCursor(Int.self, sql)
            while let b = try inner.next() { pairs.append([a, b]) }
        }
        #expect(pairs.count == 9)
        #expect(pairs.first == [1, 1])
        #expect(pairs.last == [3, 3])
    }

    @Test func errorDuringIterationStopsTheCursor() throws {
        struct Boom: Error {}
        try db.add(
            function: DatabaseFunction("failAt", argumentCount: 2) { arguments in
                if arguments[0] == arguments[1] { throw Boom() }
                return arguments[0]
            })
        let sql: SQL = "SELECT failAt(id, \(3)) FROM numbers ORDER BY id"
        let cursor = try db.fetchCursor(Int.self, sql)
        #expect(try cursor.next() == 1)
        #expect(try cursor.next() == 2)
        #expect(throws: DatabaseError.self) { try cursor.next() }
        #expect(try cursor.next() == nil)
        // The statement was reset by the failure and works again.
        #expect(try db.fetchAll(Int.self, "SELECT failAt(id, \(0)) FROM numbers WHERE id < \(4)") == [1, 2, 3])
    }

    @Test func cursorHelpers() throws {
        let cursor = try db.fetchCursor(Int.self, "SELECT id FROM numbers WHERE id <= \(4) ORDER BY id")
        #expect(try cursor.next() == 1)
        var rest: [Int] = []
        // swift-format-ignore: ReplaceForEachWithForLoop
        try cursor.forEach { rest.append($0) }  // Cursor.forEach, not Sequence.forEach
        #expect(rest == [2, 3, 4])

        let rows = try db.fetchCursor("SELECT id AS n FROM numbers WHERE id <= \(3)")
        #expect(rows.columnNames == ["n"])
        let all = try db.fetchCursor(Int.self, "SELECT id FROM numbers WHERE id > \(9_997) ORDER BY id").toArray()
        #expect(all == [9_998, 9_999, 10_000])
    }

    @Test func fetchAllValues() throws {
        #expect(try db.fetchAll(Int.self, "SELECT id FROM numbers WHERE id <= \(3) ORDER BY id DESC") == [3, 2, 1])
        #expect(try db.fetchAll(Int.self, "SELECT id FROM numbers WHERE id < \(0)") == [])
        #expect(try db.fetchAll(Int?.self, "SELECT NULL UNION ALL SELECT 1") == [nil, 1])
        #expect(try db.fetchAll(Int.self, "SELECT id FROM numbers").count == 10_000)
        #expect(throws: DatabaseError.self) { try db.fetchAll(Int.self, "SELECT 1 UNION ALL SELECT NULL") }
    }

    @Test func fetchAllRows() throws {
        let rows = try db.fetchAll("SELECT id, square FROM numbers WHERE id <= \(3) ORDER BY id")
        #expect(rows.count == 3)
        let squares = try rows.map { try $0.decode(Int.self, column: "square") }
        #expect(squares == [1, 4, 9])
        #expect(try db.fetchAll("SELECT id FROM numbers WHERE id < \(0)").isEmpty)
    }

    @Test func fetchOne() throws {
        let row = try #require(try db.fetchOne("SELECT id, square FROM numbers WHERE id = \(12)"))
        #expect(try row.decode(Int.self, column: "square") == 144)
        #expect(try db.fetchOne("SELECT id FROM numbers WHERE id = \(0)") == nil)
        // The statement behind fetchOne is ready again for the next call.
        let next = try #require(try db.fetchOne("SELECT id, square FROM numbers WHERE id = \(13)"))
        #expect(try next.decode(Int.self, at: 1) == 169)
    }

    @Test func fetchValue() throws {
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM numbers") == 10_000)
        #expect(try db.fetchValue(Int.self, "SELECT square FROM numbers WHERE id = \(7)") == 49)
        // No row and a NULL value both give nil.
        #expect(try db.fetchValue(Int.self, "SELECT square FROM numbers WHERE id = \(-1)") == nil)
        #expect(try db.fetchValue(Int.self, "SELECT NULL") == nil)
        #expect(try db.fetchValue(String.self, "SELECT 'a' UNION ALL SELECT 'b'") == "a")
        let error = try #require(throws: DatabaseError.self) { try db.fetchValue(Int.self, "SELECT 'x'") }
        #expect(error.resultCode == .mismatch)
    }
}
