import Foundation
import OfflineStore
import Testing

@Suite("SQL interpolation")
struct SQLInterpolationTests {
    @Test func valuesBecomeBoundParameters() {
        let id = 42
        let title = "O'Brien"
        let done = true
        let query: SQL = "SELECT * FROM t WHERE id = \(id) AND title = \(title) AND done = \(done)"
        #expect(query.text == "SELECT * FROM t WHERE id = ? AND title = ? AND done = ?")
        #expect(query.arguments == [.integer(42), .text("O'Brien"), .integer(1)])
        #expect(query.description == query.text)
    }

    @Test func literalWithoutInterpolationHasNoArguments() {
        let query: SQL = "SELECT 1"
        #expect(query.text == "SELECT 1")
        #expect(query.arguments.isEmpty)
        let explicit = SQL(sql: "SELECT ?", arguments: [.real(0.5)])
        #expect(explicit.text == "SELECT ?")
        #expect(explicit.arguments == [.real(0.5)])
    }

    @Test func optionalsBindNull() {
        let missing: String? = nil
        let present: Int? = 3
        let query: SQL = "VALUES (\(missing), \(present))"
        #expect(query.text == "VALUES (?, ?)")
        #expect(query.arguments == [.null, .integer(3)])
    }

    @Test func otherConvertibleTypesBind() throws {
        let uuid = try #require(UUID(uuidString: "00000000-0000-0000-0000-0000000000FF"))
        let date = Date(timeIntervalSince1970: 10)
        let query: SQL = "VALUES (\(uuid), \(date), \(Data([1, 2])), \(Priority.high), \(1.25))"
        #expect(query.text == "VALUES (?, ?, ?, ?, ?)")
        var uuidBytes = Data(repeating: 0, count: 16)
        uuidBytes[15] = 0xFF
        #expect(query.arguments == [.blob(uuidBytes), .real(10), .blob(Data([1, 2])), .integer(3), .real(1.25)])
    }

    @Test func identifiersAreQuoted() {
        let query: SQL = "SELECT \(identifier: "order") FROM \(identifier: "my \"odd\" table")"
        #expect(query.text == #"SELECT "order" FROM "my ""odd"" table""#)
        #expect(query.arguments.isEmpty)
        #expect(quoteIdentifier("plain") == #""plain""#)
        #expect(quoteIdentifier(#"a""b"#) == #""a""""b""#)
        #expect(quoteIdentifier("") == #""""#)
    }

    @Test func quotedIdentifiersWorkInARealDatabase() throws {
        let db = try Database.inMemory()
        let table = #"my "odd" table; DROP TABLE x"#
        let column = "select"
        try db.execute("CREATE TABLE \(identifier: table) (\(identifier: column) TEXT)")
        try db.execute("INSERT INTO \(identifier: table) (\(identifier: column)) VALUES (\("v"))")
        #expect(try db.scalar(String.self, "SELECT \(identifier: column) FROM \(identifier: table)") == "v")
        #expect(try db.scalar(String.self, "SELECT name FROM sqlite_schema WHERE type = 'table'") == table)
    }

    @Test func listsExpandToParameters() {
        let ids = [3, 1, 2]
        let query: SQL = "SELECT * FROM t WHERE id IN (\(list: ids)) AND kind IN (\(list: ["a"]))"
        #expect(query.text == "SELECT * FROM t WHERE id IN (?, ?, ?) AND kind IN (?)")
        #expect(query.arguments == [.integer(3), .integer(1), .integer(2), .text("a")])

        let empty: SQL = "SELECT * FROM t WHERE id IN (\(list: [Int]()))"
        #expect(empty.text == "SELECT * FROM t WHERE id IN ()")
        #expect(empty.arguments.isEmpty)
    }

    /// Regression: an empty list used to become `(NULL)`, and `NOT IN (NULL)` matches no row.
    @Test func emptyListsKeepInAndNotInMeanings() throws {
        let db = try Database.inMemory()
        try db.executeScript("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2);")
        let none = [Int]()
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM t WHERE id IN (\(list: none))") == 0)
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM t WHERE id NOT IN (\(list: none))") == 2)
    }

    @Test func listsQueryARealTable() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)")
        for (id, name) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
            try db.execute("INSERT INTO t VALUES (\(id), \(name))")
        }
        let names = try db.fetchAll(String.self, "SELECT name FROM t WHERE id IN (\(list: [4, 2, 9])) ORDER BY id")
        #expect(names == ["b", "d"])
        let none = try db.fetchAll(String.self, "SELECT name FROM t WHERE id IN (\(list: [Int]()))")
        #expect(none.isEmpty)
        let byName = try db.fetchAll(Int.self, "SELECT id FROM t WHERE name IN (\(list: Set(["c"]))) ORDER BY id")
        #expect(byName == [3])
    }

    @Test func fragmentsCompose() {
        let minimum = 5
        let filter: SQL = "score > \(minimum)"
        let order: SQL = " ORDER BY \(identifier: "score") DESC"
        var query: SQL = "SELECT * FROM t WHERE \(filter) AND name = \("x")"
        query.append(order)
        query = query + " LIMIT \(10)"
        #expect(query.text == #"SELECT * FROM t WHERE score > ? AND name = ? ORDER BY "score" DESC LIMIT ?"#)
        #expect(query.arguments == [.integer(5), .text("x"), .integer(10)])
    }

    @Test func composedFragmentsRunAgainstARealTable() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (name TEXT, score INTEGER)")
        for (name, score) in [("a", 1), ("b", 7), ("c", 9), ("b", 12)] {
            try db.execute("INSERT INTO t VALUES (\(name), \(score))")
        }
        let filter: SQL = "score > \(5)"
        let names: SQL = "name IN (\(list: ["b", "c"]))"
        let query: SQL = "SELECT score FROM t WHERE \(filter) AND \(names) ORDER BY score" + " LIMIT \(2)"
        #expect(try db.fetchAll(Int.self, query) == [7, 9])
    }

    @Test func injectionAttemptIsStoredAsData() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (name TEXT)")
        let attack = "x'); DROP TABLE t; --"
        try db.execute("INSERT INTO t (name) VALUES (\(attack))")
        try db.execute("INSERT INTO t (name) VALUES (\("Robert'); DROP TABLE t;--"))")

        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name = 't'") == 1)
        #expect(
            try db.fetchAll(String.self, "SELECT name FROM t ORDER BY rowid") == [
                attack, "Robert'); DROP TABLE t;--",
            ])
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM t WHERE name = \(attack)") == 1)
    }
}
