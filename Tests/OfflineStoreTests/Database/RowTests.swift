import Foundation
import OfflineStore
import Testing

@Suite("Rows")
struct RowTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, age INTEGER, photo BLOB)")
        try db.execute("INSERT INTO people VALUES (\(1), \("Ada"), \(36), \(Data([1, 2])))")
        try db.execute("INSERT INTO people VALUES (\(2), \("Brian"), \(Int?.none), \(Data()))")
        try db.execute("INSERT INTO people VALUES (\(3), \("Chen"), \(51), \(Data?.none))")
    }

    @Test func valuesByIndexAndByName() throws {
        let cursor = try db.fetchCursor("SELECT id, name, age, photo FROM people WHERE id = \(1)")
        let row = try #require(try cursor.next())
        #expect(row.count == 4)
        #expect(row.columnNames == ["id", "name", "age", "photo"])

        let id: Int = try row[0]
        let name: String = try row[1]
        #expect(id == 1)
        #expect(name == "Ada")
        #expect(try row.decode(Int.self, at: 2) == 36)
        #expect(try row.decode(Data.self, at: 3) == Data([1, 2]))

        let byName: String = try row["name"]
        #expect(byName == "Ada")
        #expect(try row.decode(Int.self, column: "age") == 36)
        #expect(try row.databaseValue(named: "photo") == .blob(Data([1, 2])))
        #expect(try row.databaseValue(at: 0) == .integer(1))
        #expect(try row.values() == [.integer(1), .text("Ada"), .integer(36), .blob(Data([1, 2]))])
    }

    @Test func columnNamesAreCaseInsensitive() throws {
        let cursor = try db.fetchCursor("SELECT id, name AS FullName FROM people WHERE id = \(2)")
        let row = try #require(try cursor.next())
        let upper: String = try row["FULLNAME"]
        let lower: String = try row["fullname"]
        let exact: String = try row["FullName"]
        #expect([upper, lower, exact] == ["Brian", "Brian", "Brian"])
        #expect(try row.decode(Int.self, column: "ID") == 2)
        #expect(row.index(ofColumn: "fULLnAME") == 1)
        #expect(row.hasColumn("Id"))
        #expect(!row.hasColumn("age"))
    }

    @Test func exactNameFirstThenLeftmostCaseInsensitiveMatch() throws {
        let cursor = try db.fetchCursor("SELECT 1 AS x, 2 AS x, 3 AS Y, 4 AS y")
        let row = try #require(try cursor.next())
        // Two columns of the same name: the leftmost wins, as in SQLite.
        #expect(try row.decode(Int.self, column: "x") == 1)
        #expect(try row.decode(Int.self, column: "X") == 1)
        // An exact match beats an earlier case-insensitive one.
        #expect(try row.decode(Int.self, column: "y") == 4)
        #expect(try row.decode(Int.self, column: "Y") == 3)
        #expect(row.index(ofColumn: "x") == 0)
    }

    @Test func wideRowsLookUpNamesTheSameWay() throws {
        // More than a handful of columns: name lookup may take another path, with the same rules.
        let sql =
            "SELECT " + (0..<40).map { "\($0) AS Col\($0)" }.joined(separator: ", ")
            + ", 100 AS col5, 200 AS dup, 300 AS dup"
        let cursor = try db.fetchCursor(SQL(sql: sql))
        let row = try #require(try cursor.next())
        #expect(row.count == 43)
        #expect(try row.decode(Int.self, column: "Col39") == 39)
        #expect(try row.decode(Int.self, column: "col39") == 39)
        #expect(try row.decode(Int.self, column: "COL0") == 0)
        // Exact match beats an earlier case-insensitive one; duplicates resolve to the leftmost.
        #expect(try row.decode(Int.self, column: "col5") == 100)
        #expect(try row.decode(Int.self, column: "Col5") == 5)
        #expect(try row.decode(Int.self, column: "dup") == 200)
        #expect(try row.decode(Int.self, column: "DUP") == 200)
        #expect(row.index(ofColumn: "nope") == nil)
        let copy = try row.copy()
        #expect(try copy.decode(Int.self, column: "COL39") == 39)
        #expect(try copy.decode(Int.self, column: "dup") == 200)
    }

    @Test func nullsAndOptionals() throws {
        let cursor = try db.fetchCursor("SELECT age, photo FROM people WHERE id = \(2)")
        let row = try #require(try cursor.next())
        let age: Int? = try row["age"]
        #expect(age == nil)
        #expect(try row.databaseValue(at: 0).isNull)
        // An empty BLOB is a value, not NULL.
        let photo: Data? = try row["photo"]
        #expect(photo == Data())
    }

    @Test func outOfRangeIndexThrows() throws {
        let cursor = try db.fetchCursor("SELECT id, name FROM people")
        let row = try #require(try cursor.next())
        for index in [2, 100, -1] {
            let error = try #require(throws: DatabaseError.self) { try row.databaseValue(at: index) }
            #expect(error.resultCode == .range)
            #expect(error.message.contains("\(index)"))
            #expect(throws: DatabaseError.self) { try row.decode(String.self, at: index) }
        }
        let detached = try Row(columns: ["a"], values: [.integer(1)])
        let error = try #require(throws: DatabaseError.self) { try detached.databaseValue(at: 1) }
        #expect(error.resultCode == .range)
    }

    @Test func missingColumnNameThrowsNamingTheColumn() throws {
        let cursor = try db.fetchCursor("SELECT id, name FROM people")
        let row = try #require(try cursor.next())
        let error = try #require(throws: DatabaseError.self) { try row.decode(String.self, column: "nickname") }
        #expect(error.message.contains("'nickname'"))
        #expect(error.message.contains("id, name"))
        #expect(error.sql == "SELECT id, name FROM people")
        #expect(throws: DatabaseError.self) { try row.databaseValue(named: "nickname") }
        #expect(row.index(ofColumn: "nickname") == nil)
    }

    @Test func conversionErrorNamesTheColumn() throws {
        let cursor = try db.fetchCursor("SELECT id, name FROM people WHERE id = \(1)")
        let row = try #require(try cursor.next())
        let error = try #require(throws: DatabaseError.self) { try row.decode(Int.self, column: "name") }
        #expect(error.resultCode == .mismatch)
        #expect(error.message.contains("column 'name'"))
        #expect(error.message.contains("TEXT (3 bytes)"))
        #expect(error.sql == "SELECT id, name FROM people WHERE id = ?")
    }

    /// Regression: conversion errors used to quote the stored value, which is user data.
    @Test func conversionErrorsShowTheValueOnlyOnOptIn() throws {
        for optIn in [false, true] {
            var configuration = Configuration()
            configuration.publicStatementArguments = optIn
            let db = try Database.inMemory(configuration: configuration)
            let error = try #require(throws: DatabaseError.self) {
                try db.fetchValue(Int.self, "SELECT \("hunter2-secret")")
            }
            #expect(error.value == .text("hunter2-secret"))
            #expect(!error.message.contains("hunter2"))
            #expect(error.description.contains("hunter2") == optIn, "\(error)")
        }
    }

    /// Regression: column names were read once at prepare; SQLite re-prepares a cached
    /// `SELECT *` after a schema change, and values came back under the old names.
    @Test func columnNamesFollowAReprepareAfterASchemaChange() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("rebuild.sqlite")
        let reader = try Database(path: path)
        let writer = try Database(path: path)
        try writer.executeScript("CREATE TABLE rem (title TEXT, note TEXT); INSERT INTO rem VALUES ('T', 'N');")
        let before = try #require(try reader.fetchOne("SELECT * FROM rem"))
        #expect(try before.decode(String.self, column: "title") == "T")

        try writer.executeScript(
            """
            CREATE TABLE rem_new (note TEXT, title TEXT, done INTEGER DEFAULT 0);
            INSERT INTO rem_new (note, title) SELECT note, title FROM rem;
            DROP TABLE rem;
            ALTER TABLE rem_new RENAME TO rem;
            """)
        let after = try #require(try reader.fetchOne("SELECT * FROM rem"))
        #expect(after.columnNames == ["note", "title", "done"])
        #expect(try after.decode(String.self, column: "title") == "T")
        #expect(try after.decode(String.self, column: "note") == "N")
        #expect(try after.decode(Int.self, column: "done") == 0)
    }

    @Test func staleRowFromACursorIsAMisuse() throws {
        let cursor = try db.fetchCursor("SELECT id, name FROM people ORDER BY id")
        let first = try #require(try cursor.next())
        #expect(try first.decode(Int.self, at: 0) == 1)
        let second = try #require(try cursor.next())
        #expect(try second.decode(Int.self, at: 0) == 2)

        // The first row was a view of the statement's previous row: reading it now must not return row 2's data.
        let error = try #require(throws: DatabaseError.self) { try first.decode(Int.self, at: 0) }
        #expect(error.resultCode == .misuse)
        #expect(error.message.contains("copy()"))
        #expect(throws: DatabaseError.self) { try first.values() }
        #expect(throws: DatabaseError.self) { try first.copy() }

        // Once the cursor is exhausted the statement is reset: every row it produced is stale.
        while try cursor.next() != nil {}
        #expect(throws: DatabaseError.self) { try second.decode(String.self, at: 1) }
    }

    @Test func rowOfAClosedConnectionIsAMisuse() throws {
        let db = try Database.inMemory()
        let cursor = try db.fetchCursor("SELECT 1 AS a, 'x' AS b")
        let row = try #require(try cursor.next())
        let copy = try row.copy()
        try db.close()
        // Every way of reading the row refuses, as the statement itself does.
        let value = try #require(throws: DatabaseError.self) { try row.databaseValue(at: 0) }
        #expect(value.resultCode == .misuse)
        let decoded = try #require(throws: DatabaseError.self) { try row.decode(Int.self, at: 0) }
        #expect(decoded.resultCode == .misuse)
        let byName = try #require(throws: DatabaseError.self) { try row.decode(String.self, column: "b") }
        #expect(byName.resultCode == .misuse)
        #expect(throws: DatabaseError.self) { try cursor.next() }
        // A copy does not depend on the connection.
        #expect(try copy.decode(String.self, column: "b") == "x")
    }

    @Test func copiedRowStaysValid() throws {
        let cursor = try db.fetchCursor("SELECT id, name, photo FROM people ORDER BY id")
        let first = try #require(try cursor.next())
        let copy = try first.copy()
        while try cursor.next() != nil {}
        // Reusing the statement for another query does not touch the copy either.
        _ = try db.fetchAll(Int.self, "SELECT id, name, photo FROM people ORDER BY id")

        #expect(try copy.decode(Int.self, at: 0) == 1)
        #expect(try copy.decode(String.self, column: "NAME") == "Ada")
        #expect(try copy.values() == [.integer(1), .text("Ada"), .blob(Data([1, 2]))])
        #expect(copy.columnNames == ["id", "name", "photo"])
        #expect(try copy.copy().values() == copy.values())
    }

    @Test func detachedRows() throws {
        let row = try Row(columns: ["a", "B"], values: [.text("x"), .null])
        #expect(row.count == 2)
        #expect(try row.decode(String.self, column: "a") == "x")
        #expect(try row.decode(Int?.self, column: "b") == nil)
        #expect(throws: DatabaseError.self) { try row.decode(Int.self, column: "b") }
    }

    @Test func detachedRowWithMismatchedCountsIsRefused() throws {
        let error = try #require(throws: DatabaseError.self) {
            try Row(columns: ["a", "b"], values: [.integer(1)])
        }
        #expect(error.resultCode == .misuse)
        #expect(error.message.contains("2 columns, 1 values"))
    }

    @Test func fetchedRowsAreCopies() throws {
        let rows = try db.fetchAll("SELECT id, name FROM people ORDER BY id")
        #expect(rows.count == 3)
        #expect(try rows.map { try $0.decode(String.self, column: "name") } == ["Ada", "Brian", "Chen"])
        let one = try #require(try db.fetchOne("SELECT name, age FROM people WHERE id = \(3)"))
        #expect(try one.decode(Int.self, column: "age") == 51)
        #expect(try one.values() == [.text("Chen"), .integer(51)])
    }

    /// Rows do not keep their statement alive: a row whose statement is gone, and whose
    /// row counter went on to another statement, must still read as stale, not as that
    /// other statement's row.
    @Test func rowOfAFreedStatementStaysStaleAfterItsCounterIsReused() throws {
        let sql: SQL = "SELECT id, name FROM people ORDER BY id"
        let busy = try db.fetchCursor(sql)  // holds the cached statement
        _ = try busy.next()
        var stale: Row?
        do {
            let uncached = try db.fetchCursor(sql)  // a fresh statement, freed with its cursor
            stale = try uncached.next()
            #expect(try stale?.decode(String.self, column: "name") == "Ada")
        }
        for _ in 0..<3 {
            let other = try db.fetchCursor(sql)  // may reuse the freed statement's counter
            while try other.next() != nil {}
        }
        let row = try #require(stale)
        let error = try #require(throws: DatabaseError.self) { try row.decode(String.self, at: 1) }
        #expect(error.resultCode == .misuse)
        #expect(throws: DatabaseError.self) { try row.copy() }
        #expect(row.columnNames.isEmpty)
        withExtendedLifetime(busy) {}
    }

    /// TEXT and BLOB bytes read in place are the stored bytes, from a cursor's current row and
    /// from a copied row alike; NULL is empty; a number is refused, and so is a stale row.
    @Test func textAndBlobBytesAreReadInPlace() throws {
        func bytes(_ row: Row, _ index: Int) throws -> [UInt8] { try row.withUnsafeBytes(at: index) { Array($0) } }
        let cursor = try db.fetchCursor("SELECT name, photo, age, id FROM people ORDER BY id")
        var live: [[UInt8]] = []
        var copies: [Row] = []
        var first: Row?
        while let row = try cursor.next() {
            live += [try bytes(row, 0), try bytes(row, 1)]
            copies.append(try row.copy())
            first = first ?? row
            let error = try #require(throws: DatabaseError.self) { try bytes(row, 3) }
            #expect(error.message.contains("not TEXT or BLOB"))
        }
        #expect(live == [Array("Ada".utf8), [1, 2], Array("Brian".utf8), [], Array("Chen".utf8), []])
        #expect(try copies.flatMap { [try bytes($0, 0), try bytes($0, 1)] } == live)
        #expect(throws: DatabaseError.self) { try bytes(copies[0], 2) }
        #expect(throws: DatabaseError.self) { try bytes(copies[0], 4) }
        #expect(throws: DatabaseError.self) { try bytes(try #require(first), 0) }
    }
}
