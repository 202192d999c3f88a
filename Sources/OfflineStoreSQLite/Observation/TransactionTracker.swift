import CSQLite

/// Follows what a connection's transactions touch, for the observers of its commits: the tables
/// each statement reads and writes (``StatementAccess``, from SQLite's authorizer while the
/// statement is prepared), the tables the open transaction wrote, and the moment a commit has
/// completed (the commit hook runs before it is durable, when another connection would not see
/// it yet: listeners are called once the statement that committed has returned, with
/// `sqlite3_get_autocommit` back on).
///
/// Owned by the connection and used on the thread using it, as the connection is.
final class TransactionTracker {
    /// The access of the statement being prepared; nil when none is.
    private var preparing: StatementAccess?
    /// What the open transaction wrote.
    private var written = DatabaseRegion.empty
    /// The commit hook ran; the commit has completed once the connection is back in autocommit.
    private var isCommitting = false
    /// The tables the statements run since ``collectReads()`` read; nil when not collecting.
    private var reads: DatabaseRegion?
    private var listeners: [Int: TransactionListener] = [:]
    private var nextListener = 0

    /// Tells `listener` of each commit that completed and each rollback, on the connection's
    /// thread; returns the number ``removeListener(_:)`` takes.
    func addListener(_ listener: TransactionListener) -> Int {
        nextListener += 1
        listeners[nextListener] = listener
        return nextListener
    }

    func removeListener(_ id: Int) { listeners[id] = nil }

    var hasListeners: Bool { !listeners.isEmpty }

    // MARK: Preparing

    func beginPreparing() { preparing = StatementAccess() }

    func endPreparing() -> StatementAccess? {
        defer { preparing = nil }
        return preparing
    }

    /// One call of the authorizer, while a statement is prepared (SQLite also calls it when it
    /// prepares a statement again after a schema change: then nothing is recorded).
    func authorize(action: Int32, table: String?) { preparing?.note(action: action, table: table) }

    // MARK: Running

    /// Before a statement's first step.
    func willRun(access: StatementAccess?, isReadOnly: Bool) {
        if reads != nil { reads!.formUnion(access?.read ?? .everything) }
        guard !isReadOnly else { return }
        written.formUnion(access?.written ?? .everything)
    }

    /// The tables read by the statements `body` runs.
    func collectReads<Output>(_ body: () throws -> Output) rethrows -> (Output, DatabaseRegion) {
        reads = .empty
        defer { reads = nil }
        let output = try body()
        return (output, reads ?? .everything)
    }

    /// The commit hook.
    func willCommit() { isCommitting = true }

    /// The rollback hook: nothing of the transaction was written.
    func didRollBack() {
        isCommitting = false
        written = .empty
        for listener in listeners.values { listener.didRollBack?() }
    }

    /// After each step and reset: tells the listeners of a commit that has completed.
    @inline(__always)
    func afterStep(_ connection: OpaquePointer) {
        guard isCommitting, sqlite3_get_autocommit(connection) != 0 else { return }
        isCommitting = false
        let region = written
        written = .empty
        guard !region.isEmpty else { return }
        for (id, listener) in listeners where !listener.didCommit(region) { listeners[id] = nil }
    }
}

/// What a ``TransactionTracker`` tells of the connection's transactions.
struct TransactionListener {
    /// A commit completed that wrote these tables; false removes the listener.
    var didCommit: (DatabaseRegion) -> Bool
    /// The transaction rolled back (or a commit hook refused it).
    var didRollBack: (() -> Void)?
}
