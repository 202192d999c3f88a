import Foundation
import OfflineStore
import Testing

@Suite("Statements")
struct StatementTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, flag INTEGER, note TEXT)")
    }

    @Test func cachedStatementIsReused() throws {
        let sql = "SELECT name FROM t WHERE id = ?"
        let first = try db.cachedStatement(sql)
        let second = try db.cachedStatement(sql)
        #expect(first === second)
        #expect(try db.cachedStatement("SELECT id FROM t") !== first)
        // makeStatement always prepares a statement of its own.
        let own = try db.makeStatement(sql)
        #expect(own !== first)
        #expect(try db.makeStatement(sql) !== own)

        // The cached statement is the one execute(_:) uses, and it keeps working after each use.
        try db.execute("INSERT INTO t (id, name) VALUES (\(1), \("a"))")
        let insert = try db.cachedStatement("INSERT INTO t (id, name) VALUES (?, ?)")
        try db.execute("INSERT INTO t (id, name) VALUES (\(2), \("b"))")
        #expect(try db.cachedStatement("INSERT INTO t (id, name) VALUES (?, ?)") === insert)
        #expect(try db.count("t") == 2)
    }

    @Test func statementDescribesItself() throws {
        let statement = try db.makeStatement("SELECT id, name AS title FROM t WHERE id > ? AND name = :name")
        #expect(statement.sql == "SELECT id, name AS title FROM t WHERE id > ? AND name = :name")
        #expect(statement.parameterCount == 2)
        #expect(statement.columnCount == 2)
        #expect(statement.columnNames == ["id", "title"])
    }

    @Test func parameterPackExecute() throws {
        let insert = try db.cachedStatement("INSERT INTO t (id, name, score, flag, note) VALUES (?, ?, ?, ?, ?)")
        try insert.execute(1, "one", 1.5, true, String?.none)
        try insert.execute(Int64(2), "two", Float(2.5), false, String?.some("n"))
        #expect(db.changesCount == 1)
        #expect(db.lastInsertedRowID == 2)

        let rows = try db.fetchCursor("SELECT id, name, score, flag, note FROM t ORDER BY id")
        let first = try #require(try rows.next())
        #expect(try first.values() == [.integer(1), .text("one"), .real(1.5), .integer(1), .null])
        let second = try #require(try rows.next())
        #expect(try second.values() == [.integer(2), .text("two"), .real(2.5), .integer(0), .text("n")])
        #expect(try rows.next() == nil)
    }

    @Test func preparedStatementRunsManyTimes() throws {
        let insert = try db.makeStatement("INSERT INTO t (id, name) VALUES (?, ?)")
        for id in 1...100 {
            try insert.execute(id, "name \(id)")
        }
        try insert.execute([101, nil])
        #expect(try db.count("t") == 101)
        #expect(try db.scalar(String.self, "SELECT name FROM t WHERE id = 57") == "name 57")
        #expect(try db.scalar(String.self, "SELECT name FROM t WHERE id = 101") == nil)
    }

    @Test func wrongArgumentCountIsARangeError() throws {
        let insert = try db.makeStatement("INSERT INTO t (id, name) VALUES (?, ?)")

        let tooFew = try #require(throws: DatabaseError.self) { try insert.execute(1) }
        #expect(tooFew.resultCode == .range)
        #expect(tooFew.message.contains("2 parameter(s) but 1 argument(s)"))
        #expect(tooFew.sql == "INSERT INTO t (id, name) VALUES (?, ?)")

        let tooMany = try #require(throws: DatabaseError.self) { try insert.execute(1, "a", "extra") }
        #expect(tooMany.resultCode == .range)

        let arrayTooMany = try #require(throws: DatabaseError.self) { try insert.execute([1, "a", 3]) }
        #expect(arrayTooMany.resultCode == .range)

        let arrayTooFew = try #require(throws: DatabaseError.self) {
            try db.execute(sql: "INSERT INTO t (id, name) VALUES (?, ?)", arguments: [1])
        }
        #expect(arrayTooFew.resultCode == .range)
        #expect(try db.count("t") == 0)
    }

    @Test func namedArguments() throws {
        try db.execute(
            sql: "INSERT INTO t (id, name, note) VALUES (:id, @name, $note)",
            arguments: ["id": 7, "name": "seven", "note": nil])
        let cursor = try db.fetchCursor("SELECT id, name, note FROM t")
        let row = try #require(try cursor.next())
        #expect(try row.values() == [.integer(7), .text("seven"), .null])

        // The same name used twice binds the same value.
        try db.execute(sql: "INSERT INTO t (id, name) VALUES (:n, CAST(:n AS TEXT))", arguments: ["n": 8])
        #expect(try db.scalar(String.self, "SELECT name FROM t WHERE id = 8") == "8")

        let missing = try #require(throws: DatabaseError.self) {
            try db.execute(sql: "UPDATE t SET name = :name WHERE id = :id", arguments: ["id": 7])
        }
        #expect(missing.resultCode == .range)
        #expect(missing.message.contains(":name"))
        #expect(try db.scalar(String.self, "SELECT name FROM t WHERE id = 7") == "seven")
    }

    @Test func multipleStatementsInExecuteAreAMisuse() throws {
        let error = try #require(throws: DatabaseError.self) {
            try db.execute(sql: "INSERT INTO t (id) VALUES (1); INSERT INTO t (id) VALUES (2)")
        }
        #expect(error.resultCode == .misuse)
        #expect(error.message.contains("executeScript"))
        // Nothing ran, not even the first statement.
        #expect(try db.count("t") == 0)

        #expect(throws: DatabaseError.self) { try db.makeStatement("SELECT 1; SELECT 2") }
        // A trailing semicolon or comment is still one statement.
        try db.execute(sql: "INSERT INTO t (id) VALUES (3);  ")
        try db.execute(sql: "INSERT INTO t (id) VALUES (4); -- done\n")
        #expect(try db.count("t") == 2)
    }

    @Test func emptySQLIsAMisuse() throws {
        for sql in ["", "   ", "-- only a comment"] {
            let error = try #require(throws: DatabaseError.self) { try db.makeStatement(sql) }
            #expect(error.resultCode == .misuse)
        }
    }

    @Test func executeScriptRunsStatementsInOrder() throws {
        try db.executeScript(
            """
            CREATE TABLE log (step INTEGER, value INTEGER);
            INSERT INTO log VALUES (1, 10);
            -- a comment between statements
            UPDATE log SET value = value * 3;
            INSERT INTO log VALUES (2, 5);
            UPDATE log SET value = value + 1;
            """)
        // Any other order would give different values.
        let values = try db.fetchAll(Int.self, "SELECT value FROM log ORDER BY step")
        #expect(values == [31, 6])
    }

    @Test func executeScriptNamesTheFailingStatement() throws {
        let error = try #require(throws: DatabaseError.self) {
            try db.executeScript(
                """
                CREATE TABLE a (x NOT NULL);
                INSERT INTO a VALUES (NULL);
                CREATE TABLE b (x);
                """)
        }
        #expect(error.resultCode == .constraintNotNull)
        #expect(error.message.contains("statement 2 of the script"))
        #expect(error.sql?.contains("INSERT INTO a VALUES (NULL)") == true)
        #expect("\(error)".contains("statement 2 of the script"))
        // Statements before the failure stay applied; the ones after never ran.
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name = 'a'") == 1)
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name = 'b'") == 0)
    }

    @Test func executeScriptNamesAStatementThatDoesNotPrepare() throws {
        let error = try #require(throws: DatabaseError.self) {
            try db.executeScript("CREATE TABLE c (x); INSERT INTO c VALUES (1); SELEC oops; CREATE TABLE d (x);")
        }
        #expect(error.message.contains("statement 3 of the script"))
        #expect(error.message.contains("syntax error"))
        #expect(error.sql?.contains("SELEC oops") == true)
        #expect(try db.count("c") == 1)
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name = 'd'") == 0)
    }

    @Test func finalizeTwiceIsAMisuse() throws {
        let statement = try db.makeStatement("SELECT 1")
        try statement.finalize()
        let error = try #require(throws: DatabaseError.self) { try statement.finalize() }
        #expect(error.resultCode == .misuse)
        #expect(error.message.contains("finalize"))
    }

    @Test func useAfterFinalizeIsAMisuse() throws {
        let statement = try db.makeStatement("INSERT INTO t (id) VALUES (?)")
        try statement.finalize()
        let execute = try #require(throws: DatabaseError.self) { try statement.execute(1) }
        #expect(execute.resultCode == .misuse)
        #expect(execute.message.contains("after finalize"))
        let bind = try #require(throws: DatabaseError.self) { try statement.bind(.integer(1), toParameter: 1) }
        #expect(bind.resultCode == .misuse)
        #expect(try db.count("t") == 0)
    }

    @Test func usingAClosedConnectionIsAMisuse() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (x)")
        let held = try db.makeStatement("INSERT INTO t VALUES (1)")
        #expect(db.isOpen)
        try db.close()
        #expect(!db.isOpen)

        let execute = try #require(throws: DatabaseError.self) { try db.execute("INSERT INTO t VALUES (2)") }
        #expect(execute.resultCode == .misuse)
        #expect(execute.message.contains("closed connection"))
        #expect(throws: DatabaseError.self) { try db.makeStatement("SELECT 1") }
        #expect(throws: DatabaseError.self) { try db.executeScript("SELECT 1;") }
        #expect(throws: DatabaseError.self) { try db.fetchCursor("SELECT 1") }

        let statementError = try #require(throws: DatabaseError.self) { try held.execute() }
        #expect(statementError.resultCode == .misuse)
        #expect(statementError.message.contains("connection was closed"))
    }

    @Test func closingTwiceIsAMisuse() throws {
        let db = try Database.inMemory()
        try db.close()
        let error = try #require(throws: DatabaseError.self) { try db.close() }
        #expect(error.resultCode == .misuse)
        #expect(error.message.contains("twice"))
    }

    @Test func changesAndRowIDs() throws {
        try db.execute("INSERT INTO t (id, name) VALUES (\(10), \("x")), (\(11), \("y")), (\(12), \("z"))")
        #expect(db.changesCount == 3)
        #expect(db.lastInsertedRowID == 12)
        try db.execute("UPDATE t SET name = 'w' WHERE id >= \(11)")
        #expect(db.changesCount == 2)
        #expect(db.totalChangesCount == 5)
    }
}
