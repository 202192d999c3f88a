import Foundation
import OfflineStore
import Testing

private struct Abort: Error, Equatable {
    var reason = "abort"
}

@Suite("Transactions and savepoints")
struct TransactionTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.executeScript(
            """
            CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT UNIQUE);
            CREATE TABLE parents (id INTEGER PRIMARY KEY);
            CREATE TABLE children (id INTEGER PRIMARY KEY, parentID INTEGER NOT NULL REFERENCES parents(id));
            """)
    }

    func insert(_ id: Int, _ name: String? = nil) throws {
        try db.execute("INSERT INTO items (id, name) VALUES (\(id), \(name ?? "item \(id)"))")
    }

    func ids() throws -> [Int] {
        try db.fetchAll(Int.self, "SELECT id FROM items ORDER BY id")
    }

    @Test func commitsWhenTheBodyReturns() throws {
        #expect(!db.isInsideTransaction)
        let result = try db.transaction { db in
            #expect(db.isInsideTransaction)
            try insert(1)
            try insert(2)
            return "done"
        }
        #expect(result == "done")
        #expect(!db.isInsideTransaction)
        #expect(try ids() == [1, 2])
    }

    @Test func rollsBackWhenTheBodyThrows() throws {
        try insert(1)
        #expect(throws: Abort(reason: "nope")) {
            try db.transaction { _ in
                try insert(2)
                try insert(3)
                throw Abort(reason: "nope")
            }
        }
        #expect(!db.isInsideTransaction)
        #expect(try ids() == [1])
    }

    @Test func noPartialTransactionAfterAFailingStatement() throws {
        try insert(1, "taken")
        let error = try #require(throws: DatabaseError.self) {
            try db.transaction { _ in
                try insert(2)
                try insert(3)
                try insert(4, "taken")  // UNIQUE violation
                try insert(5)
            }
        }
        #expect(error.resultCode == .constraintUnique)
        #expect(!db.isInsideTransaction)
        #expect(try ids() == [1])
        // The connection is usable and the next transaction commits normally.
        try db.transaction { _ in try insert(2) }
        #expect(try ids() == [1, 2])
    }

    @Test(arguments: [TransactionKind.deferred, .immediate, .exclusive])
    func everyKindCommitsAndRollsBack(_ kind: TransactionKind) throws {
        try db.transaction(kind) { db in
            #expect(db.isInsideTransaction)
            try insert(1)
        }
        #expect(throws: Abort.self) {
            try db.transaction(kind) { _ in
                try insert(2)
                throw Abort()
            }
        }
        #expect(try ids() == [1])
    }

    @Test(arguments: [TransactionKind.immediate, .exclusive])
    func immediateAndExclusiveTakeTheWriteLockAtBegin(_ kind: TransactionKind) throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("locks.sqlite")
        let first = try Database(path: path)
        try first.execute("CREATE TABLE t (x)")
        var quick = Configuration()
        quick.busyTimeout = .milliseconds(20)
        let second = try Database(path: path, configuration: quick)

        try first.transaction(kind) { _ in
            // No statement ran yet in this transaction, but the lock is already held.
            let error = try #require(throws: DatabaseError.self) { try second.execute("INSERT INTO t VALUES (1)") }
            #expect(error.primaryResultCode == .busy)
        }
        try first.transaction(.deferred) { _ in
            // A deferred transaction takes no lock until it needs one.
            try second.execute("INSERT INTO t VALUES (2)")
        }
        #expect(try first.fetchAll(Int.self, "SELECT x FROM t") == [2])
    }

    @Test func nestedSavepointRollbackKeepsOuterWork() throws {
        try db.transaction { db in
            try insert(1)
            #expect(throws: Abort.self) {
                try db.savepoint { _ in
                    try insert(2)
                    throw Abort()
                }
            }
            #expect(db.isInsideTransaction)
            // A failing statement in a savepoint is undone alone.
            #expect(throws: DatabaseError.self) {
                try db.savepoint { _ in
                    try insert(3)
                    try insert(4, "item 1")
                }
            }
            try db.savepoint { _ in try insert(5) }
            try insert(6)
        }
        #expect(try ids() == [1, 5, 6])
    }

    @Test func deeplyNestedSavepoints() throws {
        try db.transaction { db in
            try insert(1)
            try db.savepoint { db in
                try insert(2)
                _ = try? db.savepoint { db in
                    try insert(3)
                    try db.savepoint { _ in try insert(4) }
                    throw Abort()
                }
                try insert(5)
            }
        }
        #expect(try ids() == [1, 2, 5])
    }

    @Test func nestedTransactionBecomesASavepoint() throws {
        try db.transaction(.immediate) { db in
            try insert(1)
            #expect(throws: Abort.self) {
                try db.transaction(.exclusive) { _ in
                    try insert(2)
                    throw Abort()
                }
            }
            // Only the inner work was undone: the outer transaction is still open.
            #expect(db.isInsideTransaction)
            try db.transaction { _ in try insert(3) }
            #expect(db.isInsideTransaction)
        }
        #expect(try ids() == [1, 3])
    }

    @Test func outerRollbackUndoesCommittedInnerWork() throws {
        #expect(throws: Abort.self) {
            try db.transaction { db in
                try insert(1)
                try db.transaction { _ in try insert(2) }
                try db.savepoint { _ in try insert(3) }
                throw Abort()
            }
        }
        #expect(try ids() == [])
    }

    @Test func savepointOutsideATransactionActsAsOne() throws {
        try db.savepoint { db in
            #expect(db.isInsideTransaction)
            try insert(1)
        }
        #expect(!db.isInsideTransaction)
        #expect(throws: Abort.self) {
            try db.savepoint { _ in
                try insert(2)
                throw Abort()
            }
        }
        #expect(!db.isInsideTransaction)
        #expect(try ids() == [1])
    }

    @Test func deferredForeignKeyViolationFailsAtCommit() throws {
        var caught: DatabaseError?
        do {
            try db.transaction { db in
                try db.execute("PRAGMA defer_foreign_keys = ON")
                try insert(1)
                // Deferred: this statement succeeds although parent 99 does not exist.
                try db.execute("INSERT INTO children (id, parentID) VALUES (\(1), \(99))")
                #expect(try db.count("children") == 1)
            }
            Issue.record("COMMIT should have failed on the deferred foreign key")
        } catch DatabaseError.constraintForeignKey {
            caught = DatabaseError(resultCode: .constraintForeignKey, message: "matched")
        } catch {
            Issue.record("unexpected error \(error)")
        }
        #expect(caught != nil)
        #expect(!db.isInsideTransaction)
        // Rolled back: neither the child nor the other work of the transaction was committed.
        #expect(try db.count("children") == 0)
        #expect(try ids() == [])
    }

    @Test func deferredForeignKeySatisfiedBeforeCommitSucceeds() throws {
        try db.transaction { db in
            try db.execute("PRAGMA defer_foreign_keys = ON")
            try db.execute("INSERT INTO children (id, parentID) VALUES (\(1), \(7))")
            try db.execute("INSERT INTO parents (id) VALUES (\(7))")
        }
        #expect(try db.count("children") == 1)
        #expect(try db.count("parents") == 1)
    }

    @Test func immediateForeignKeyViolationFailsTheStatement() throws {
        let error = try #require(throws: DatabaseError.self) {
            try db.transaction { db in
                try insert(1)
                try db.execute("INSERT INTO children (id, parentID) VALUES (\(1), \(99))")
            }
        }
        #expect(error.resultCode == .constraintForeignKey)
        #expect(try ids() == [])
    }

    @Test func endingTheTransactionByHandIsReported() throws {
        let error = try #require(throws: DatabaseError.self) {
            try db.transaction { db in
                try insert(1)
                try db.execute("COMMIT")
            }
        }
        #expect(error.resultCode == .abort)
        #expect(error.message.contains("ran COMMIT or ROLLBACK itself"), "\(error)")
        #expect(!db.isInsideTransaction)
    }

    /// Regression: after SQLite rolled the transaction back on its own (here `INSERT OR ROLLBACK`),
    /// statements the body still ran used to autocommit one by one.
    @Test func statementsAfterSQLiteRolledBackAreRefusedNotAutocommitted() throws {
        try insert(1)
        var refused: DatabaseError?
        let error = try #require(throws: DatabaseError.self) {
            try db.transaction { db in
                try insert(2)
                // Swallowed, as careless code would: SQLite has now rolled back the whole transaction.
                try? db.execute("INSERT OR ROLLBACK INTO items (id, name) VALUES (\(1), \("dup"))")
                do {
                    try insert(3)
                } catch let error as DatabaseError {
                    refused = error
                }
            }
        }
        #expect(error.resultCode == .abort)
        #expect(refused?.resultCode == .abort)
        #expect(refused?.message.contains("SQLite rolled back the enclosing transaction") == true)
        #expect(try ids() == [1])
        #expect(!db.isInsideTransaction)
        try insert(4)  // the connection is usable again
        #expect(try ids() == [1, 4])
    }

    /// Regression: the same inside a savepoint the README shows swallowing its error.
    @Test func swallowedSavepointAfterRollbackDoesNotLeakAutocommits() throws {
        try insert(1)
        #expect(throws: DatabaseError.self) {
            try db.transaction { db in
                try insert(2)
                try? db.savepoint { db in
                    try db.execute("INSERT OR ROLLBACK INTO items (id, name) VALUES (\(1), \("dup"))")
                }
                try? insert(3)
            }
        }
        #expect(try ids() == [1])
    }
}
