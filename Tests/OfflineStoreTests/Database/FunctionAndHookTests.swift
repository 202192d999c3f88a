import Foundation
import OfflineStore
import Testing

private struct FunctionFailure: Error, CustomStringConvertible {
    var description: String { "the function refused its input" }
}

@Suite("Custom functions and hooks")
struct FunctionAndHookTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x INTEGER, name TEXT)")
    }

    // MARK: Functions

    @Test func deterministicFunction() throws {
        let calls = Locked(0)
        try db.add(
            function: DatabaseFunction("double_it", argumentCount: 1, deterministic: true) { arguments in
                calls.withLock { $0 += 1 }
                guard case .integer(let value) = arguments[0] else { return nil }
                return value * 2
            })
        #expect(try db.fetchValue(Int.self, "SELECT double_it(\(21))") == 42)
        #expect(try db.fetchValue(Int.self, "SELECT double_it('text')") == nil)
        #expect(calls.value == 2)

        // Only deterministic functions may appear in an index expression.
        try db.execute("CREATE INDEX t_doubled ON t (double_it(x))")
        try db.execute("INSERT INTO t (x) VALUES (\(5))")
        #expect(try db.fetchAll(Int.self, "SELECT x FROM t WHERE double_it(x) = \(10)") == [5])
    }

    @Test func nonDeterministicFunctionIsRefusedInAnIndex() throws {
        try db.add(function: DatabaseFunction("random_ish", argumentCount: 1) { arguments in arguments[0] })
        #expect(try db.fetchValue(Int.self, "SELECT random_ish(\(3))") == 3)
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("CREATE INDEX t_random ON t (random_ish(x))")
        }
        #expect(error.message.contains("non-deterministic"))
    }

    @Test func variadicFunctionReceivesEveryArgument() throws {
        let received = Locked<[[DatabaseValue]]>([])
        try db.add(
            function: DatabaseFunction("describe_all") { arguments in
                received.withLock { $0.append(arguments) }
                return arguments.map(\.storageClass.rawValue).joined(separator: ",")
            })
        #expect(try db.fetchValue(String.self, "SELECT describe_all()") == "")
        #expect(
            try db.fetchValue(String.self, "SELECT describe_all(1, 2.5, 'é', x'00ff', x'', NULL)")
                == "INTEGER,REAL,TEXT,BLOB,BLOB,NULL")
        #expect(
            received.value.last == [.integer(1), .real(2.5), .text("é"), .blob(Data([0, 0xFF])), .blob(Data()), .null])
    }

    @Test func fixedArgumentCountIsEnforcedBySQLite() throws {
        try db.add(function: DatabaseFunction("one_arg", argumentCount: 1) { _ in 1 })
        let error = try #require(throws: DatabaseError.self) { try db.execute("SELECT one_arg(1, 2)") }
        #expect(error.message.contains("one_arg"))
    }

    @Test func functionResultsOfEveryType() throws {
        try db.add(
            function: DatabaseFunction("make", argumentCount: 1) { arguments in
                switch arguments[0] {
                case .text("int"): return Int64.max
                case .text("real"): return 0.25
                case .text("text"): return "a\u{0}é"
                case .text("empty-text"): return ""
                case .text("blob"): return Data([0, 1, 2])
                case .text("empty-blob"): return Data()
                case .text("uuid"): return UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
                default: return nil
                }
            })
        let cursor = try db.fetchCursor(
            """
            SELECT make('int'), make('real'), make('text'), make('empty-text'), make('blob'), make('empty-blob'),
                   typeof(make('empty-blob')), typeof(make('empty-text')), length(make('uuid')), make('none')
            """)
        let row = try #require(try cursor.next())
        #expect(
            try row.values() == [
                .integer(.max), .real(0.25), .text("a\u{0}é"), .text(""), .blob(Data([0, 1, 2])), .blob(Data()),
                .text("blob"), .text("text"), .integer(16), .null,
            ])
    }

    @Test func throwingFunctionBecomesAnSQLError() throws {
        try db.add(
            function: DatabaseFunction("checked", argumentCount: 1) { arguments in
                if arguments[0] == .integer(0) { throw FunctionFailure() }
                return arguments[0]
            })
        try db.execute("INSERT INTO t (x) VALUES (\(1))")
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("UPDATE t SET x = checked(\(0))")
        }
        #expect(error.primaryResultCode == .error)
        #expect(error.message.contains("the function refused its input"))
        #expect(error.sql == "UPDATE t SET x = checked(?)")
        // The failing statement changed nothing.
        #expect(try db.scalar(Int.self, "SELECT x FROM t") == 1)
    }

    @Test func functionThrowingDatabaseErrorKeepsItsCode() throws {
        try db.add(
            function: DatabaseFunction("to_int", argumentCount: 1) { arguments in
                try Int.fromDatabaseValue(arguments[0])
            })
        #expect(try db.fetchValue(Int.self, "SELECT to_int(\(4))") == 4)
        let error = try #require(throws: DatabaseError.self) { try db.fetchValue(Int.self, "SELECT to_int('x')") }
        #expect(error.resultCode == .mismatch)
        #expect(error.message.contains("cannot convert TEXT (1 bytes) to Int"), "\(error)")
    }

    @Test func removedFunctionIsGone() throws {
        let function = DatabaseFunction("temporary", argumentCount: 0) { _ in 1 }
        try db.add(function: function)
        #expect(try db.fetchValue(Int.self, "SELECT temporary()") == 1)
        try db.remove(function: function)
        let error = try #require(throws: DatabaseError.self) { try db.execute("SELECT temporary()") }
        #expect(error.message.contains("no such function"))
    }

    @Test func replacingAFunction() throws {
        try db.add(function: DatabaseFunction("answer", argumentCount: 0) { _ in 1 })
        try db.add(function: DatabaseFunction("answer", argumentCount: 0) { _ in 42 })
        #expect(try db.fetchValue(Int.self, "SELECT answer()") == 42)
    }

    // MARK: Hooks

    @Test func updateHookReportsEveryChange() throws {
        let changes = Locked<[DatabaseUpdate]>([])
        db.setUpdateHook { change in changes.withLock { $0.append(change) } }
        try db.execute("INSERT INTO t (id, x) VALUES (\(10), \(1))")
        try db.execute("INSERT INTO t (id, x) VALUES (\(11), \(1))")
        try db.execute("UPDATE t SET x = 2 WHERE id = \(11)")
        try db.execute("DELETE FROM t WHERE id = \(10)")
        let described = changes.value.map { "\($0.kind) \($0.schema).\($0.table) #\($0.rowID)" }
        #expect(described == ["insert main.t #10", "insert main.t #11", "update main.t #11", "delete main.t #10"])

        db.setUpdateHook(nil)
        try db.execute("INSERT INTO t (id) VALUES (\(12))")
        #expect(changes.value.count == 4)
    }

    @Test func commitHookSeesCommits() throws {
        let commits = Locked(0)
        db.setCommitHook {
            commits.withLock { $0 += 1 }
            return true
        }
        try db.execute("INSERT INTO t (x) VALUES (\(1))")
        try db.transaction { _ in
            try db.execute("INSERT INTO t (x) VALUES (\(2))")
            try db.execute("INSERT INTO t (x) VALUES (\(3))")
        }
        #expect(commits.value == 2)
        #expect(try db.count("t") == 3)
    }

    @Test func commitHookReturningFalseFailsTheCommit() throws {
        let allow = Locked(false)
        db.setCommitHook { allow.value }

        let error = try #require(throws: DatabaseError.self) {
            try db.transaction { _ in try db.execute("INSERT INTO t (x) VALUES (\(1))") }
        }
        #expect(error.resultCode == .constraintCommitHook)
        #expect(!db.isInsideTransaction)
        #expect(try db.count("t") == 0)

        // In autocommit mode the statement itself fails.
        let single = try #require(throws: DatabaseError.self) { try db.execute("INSERT INTO t (x) VALUES (\(2))") }
        #expect(single.resultCode == .constraintCommitHook)
        #expect(try db.count("t") == 0)

        allow.withLock { $0 = true }
        try db.execute("INSERT INTO t (x) VALUES (\(3))")
        #expect(try db.count("t") == 1)
        db.setCommitHook(nil)
    }

    @Test func rollbackHookSeesRollbacks() throws {
        let rollbacks = Locked(0)
        db.setRollbackHook { rollbacks.withLock { $0 += 1 } }
        try db.transaction { _ in try db.execute("INSERT INTO t (x) VALUES (\(1))") }
        #expect(rollbacks.value == 0)
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try db.transaction { _ in
                try db.execute("INSERT INTO t (x) VALUES (\(2))")
                throw Stop()
            }
        }
        #expect(rollbacks.value == 1)
        db.setRollbackHook(nil)
        #expect(throws: Stop.self) { try db.transaction { _ in throw Stop() } }
        #expect(rollbacks.value == 1)
    }

    /// Regression: invalid UTF-8 arguments were repaired with U+FFFD, so `UPDATE t SET c = f(c)`
    /// could rewrite stored bytes.
    @Test func invalidUTF8ArgumentIsAnErrorNotARepair() throws {
        try db.add(function: DatabaseFunction("ident", argumentCount: 1, deterministic: true) { $0[0] })
        #expect(try db.fetchValue(String.self, "SELECT ident('héllo')") == "héllo")
        let error = try #require(throws: DatabaseError.self) {
            try db.fetchValue(Data.self, "SELECT CAST(ident(CAST(x'61ff62' AS TEXT)) AS BLOB)")
        }
        #expect(error.message.contains("not valid UTF-8"), "\(error)")
    }

    /// NaN would become NULL in SQLite: a function returning it is an error.
    @Test func nanResultIsAnError() throws {
        try db.add(function: DatabaseFunction("nan", argumentCount: 0) { _ in Double.nan })
        let error = try #require(throws: DatabaseError.self) { try db.fetchValue(Double.self, "SELECT nan()") }
        #expect(error.message.contains("NaN"), "\(error)")
    }
}
