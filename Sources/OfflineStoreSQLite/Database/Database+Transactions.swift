/// How a transaction takes its locks. See <https://www.sqlite.org/lang_transaction.html>.
public enum TransactionKind: String, Sendable {
    /// Locks are taken when first needed (a read, then a write).
    case deferred = "DEFERRED"
    /// The write lock is taken at `BEGIN`, so the transaction never fails with
    /// `SQLITE_BUSY` half-way: the right kind for read-then-write work.
    case immediate = "IMMEDIATE"
    /// Like immediate; in WAL mode the same, otherwise it also keeps readers out.
    case exclusive = "EXCLUSIVE"
}

extension Database {
    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    ///
    /// Called inside another transaction it becomes a savepoint of that
    /// transaction (the `kind` of the outer transaction applies).
    ///
    /// ```swift
    /// try db.transaction(.immediate) { db in
    ///     try db.execute("INSERT INTO lists (id, name) VALUES (\(listID), \("Home"))")
    ///     try db.execute("INSERT INTO reminders (id, listID, title) VALUES (\(id), \(listID), \("Milk"))")
    /// }
    /// ```
    ///
    /// A failing `COMMIT` (a deferred foreign key violated, say) rolls back and throws.
    /// See <https://www.sqlite.org/lang_transaction.html>.
    public func transaction<Result>(
        _ kind: TransactionKind = .deferred, _ body: (Database) throws -> Result
    ) throws -> Result {
        if isInsideTransaction { return try savepoint(body) }
        return try runTransaction(
            begin: { db throws(DatabaseError) in
                try db.execute(sql: "BEGIN \(kind.rawValue) TRANSACTION")
            }, body)
    }

    /// A top-level transaction started by `begin` (which may wait for the write lock):
    /// commits when `body` returns, rolls back when it throws or the commit fails.
    package func runTransaction<Result>(
        begin: (Database) throws -> Void, _ body: (Database) throws -> Result
    ) throws -> Result {
        try begin(self)
        connection.managedTransactionDepth += 1
        defer { connection.managedTransactionDepth -= 1 }
        let result: Result
        do {
            result = try body(self)
        } catch {
            rollBackOpenTransaction(reason: "\(error)")
            throw error
        }
        guard isInsideTransaction else { throw transactionEndedEarly() }
        do {
            try execute(sql: "COMMIT TRANSACTION")
        } catch {
            rollBackOpenTransaction(reason: "\(error)")
            throw error
        }
        return result
    }

    /// Runs `body` inside a savepoint: its changes are kept when it returns
    /// and undone when it throws, without ending an enclosing transaction.
    /// Outside a transaction the outermost savepoint behaves like a deferred transaction.
    ///
    /// ```swift
    /// try db.transaction { db in
    ///     try db.execute("INSERT INTO lists (id, name) VALUES (\(a), \("A"))")
    ///     try? db.savepoint { db in
    ///         try db.execute("INSERT INTO lists (id, name) VALUES (\(a), \("dup"))")  // fails, undone alone
    ///     }
    /// }
    /// ```
    ///
    /// See <https://www.sqlite.org/lang_savepoint.html>.
    public func savepoint<Result>(_ body: (Database) throws -> Result) throws -> Result {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        let name = quoteIdentifier("ostore_savepoint_\(savepointDepth)")
        let startsTransaction = !isInsideTransaction
        try execute(sql: "SAVEPOINT \(name)")
        connection.managedTransactionDepth += 1
        defer { connection.managedTransactionDepth -= 1 }
        let result: Result
        do {
            result = try body(self)
        } catch {
            rollbackSavepoint(name)
            throw error
        }
        if startsTransaction, !isInsideTransaction { throw transactionEndedEarly() }
        do {
            try execute(sql: "RELEASE SAVEPOINT \(name)")
        } catch {
            rollbackSavepoint(name)
            throw error
        }
        return result
    }

    private func transactionEndedEarly() -> DatabaseError {
        DatabaseError(
            resultCode: .abort,
            message:
                "the transaction ended before its body returned: SQLite rolled it back (ROLLBACK conflict resolution, RAISE(ROLLBACK), a full disk, an I/O error) or the body ran COMMIT or ROLLBACK itself; statements after that point were refused rather than run in autocommit mode"
        )
    }

    private func rollbackSavepoint(_ name: String) {
        // SQLite may already have rolled the whole transaction back (SQLITE_FULL, an I/O error).
        guard isInsideTransaction else { return }
        try? execute(sql: "ROLLBACK TRANSACTION TO SAVEPOINT \(name)")
        try? execute(sql: "RELEASE SAVEPOINT \(name)")
    }

    /// Rolls back the open transaction, if SQLite has not already done so.
    func rollBackOpenTransaction(reason: @autoclosure () -> String) {
        configuration.logHandler.log(
            .debug, "rolling back after an error", metadata: ["path": path, "error": reason()])
        guard isInsideTransaction else { return }
        try? execute(sql: "ROLLBACK TRANSACTION")
    }
}
