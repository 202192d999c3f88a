import CSQLite

extension Database {
    /// Calls `didCommit` on this connection's thread after each commit of it completed (another
    /// connection now sees what it wrote), with the tables the transaction wrote, until it returns
    /// false; `didRollBack` after each rollback. The first
    /// listener starts recording what each statement prepared from then on reads and writes
    /// (SQLite's authorizer) and empties the statement cache, so that the statements run later
    /// are known; a statement prepared before counts as touching every table. Returns the number
    /// ``removeCommitListener(_:)`` takes.
    ///
    /// ```swift
    /// let id = db.addCommitListener { written in print("committed", written); return true }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/set_authorizer.html>.
    package func addCommitListener(
        didRollBack: (() -> Void)? = nil, didCommit: @escaping (DatabaseRegion) -> Bool
    ) -> Int {
        trackedTransactions().addListener(TransactionListener(didCommit: didCommit, didRollBack: didRollBack))
    }

    package func removeCommitListener(_ id: Int) { connection.tracker?.removeListener(id) }

    /// Runs `body` and returns the tables the statements it ran read, as far as this connection
    /// records it (every table for a statement prepared before recording began).
    ///
    /// ```swift
    /// let (count, region) = try db.collectingReads { try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") }
    /// ```
    package func collectingReads<Output>(_ body: () throws -> Output) rethrows -> (Output, DatabaseRegion) {
        try trackedTransactions().collectReads(body)
    }

    private func trackedTransactions() -> TransactionTracker {
        if let tracker = connection.tracker { return tracker }
        let tracker = TransactionTracker()
        guard let handle = try? connection.handle(for: "track transactions") else { return tracker }
        connection.tracker = tracker
        updateTransactionHooks { $0.tracker = tracker }
        sqlite3_set_authorizer(
            handle,
            { tracker, action, first, _, _, _ in
                guard let tracker else { return SQLITE_OK }
                Unmanaged<TransactionTracker>.fromOpaque(tracker).takeUnretainedValue().authorize(
                    action: action, table: first.map { String(cString: $0) })
                return SQLITE_OK
            }, Unmanaged.passUnretained(tracker).toOpaque())
        // Statements cached before were prepared unseen.
        statementCache.removeAll()
        return tracker
    }
}
