import CSQLite

/// One row change reported by the update hook.
public struct DatabaseUpdate: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case insert, update, delete
    }

    public let kind: Kind
    /// `main`, `temp` or an attached database's name.
    public let schema: String
    public let table: String
    public let rowID: Int64
}

/// Closures SQLite calls back, kept alive for as long as they are registered.
struct HookBoxes {
    var update: ClosureBox<@Sendable (DatabaseUpdate) -> Void>?
    /// The one commit and rollback hook SQLite has per connection, shared by the app's hooks and the
    /// connection's ``TransactionTracker``; registered while either is set.
    var transactions: TransactionHooks?
}

final class ClosureBox<Closure> {
    let closure: Closure
    init(_ closure: Closure) { self.closure = closure }
}

/// What the connection's commit and rollback hooks call: the app's hooks
/// (``Database/setCommitHook(_:)``, ``Database/setRollbackHook(_:)``) and the tracker of the
/// connection's observers, so that each coexists with the others.
final class TransactionHooks {
    var commit: (@Sendable () -> Bool)?
    var rollback: (@Sendable () -> Void)?
    var tracker: TransactionTracker?

    var isEmpty: Bool { commit == nil && rollback == nil && tracker == nil }

    func willCommit() -> Bool {
        // A refused commit is rolled back: the tracker hears of it from the rollback hook.
        guard commit?() ?? true else { return false }
        tracker?.willCommit()
        return true
    }

    func didRollBack() {
        tracker?.didRollBack()
        rollback?()
    }
}

extension Database {
    /// Calls `hook` for every row inserted, updated or deleted through this
    /// connection, before the change commits (rows of WITHOUT ROWID tables are
    /// not reported). Pass nil to remove it. The hook must not use the connection.
    ///
    /// ```swift
    /// db.setUpdateHook { change in print(change.kind, change.table, change.rowID) }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/update_hook.html>.
    public func setUpdateHook(_ hook: (@Sendable (DatabaseUpdate) -> Void)?) {
        guard let handle = try? connection.handle(for: "setUpdateHook") else { return }
        hooks.update = hook.map { ClosureBox($0) }
        guard let box = hooks.update else {
            sqlite3_update_hook(handle, nil, nil)
            return
        }
        sqlite3_update_hook(
            handle,
            { box, operation, schema, table, rowID in
                guard let box, let schema, let table else { return }
                let kind: DatabaseUpdate.Kind =
                    switch operation {
                    case SQLITE_INSERT: .insert
                    case SQLITE_DELETE: .delete
                    default: .update
                    }
                let hook = Unmanaged<ClosureBox<@Sendable (DatabaseUpdate) -> Void>>.fromOpaque(box)
                    .takeUnretainedValue().closure
                hook(
                    DatabaseUpdate(
                        kind: kind, schema: String(cString: schema), table: String(cString: table), rowID: rowID))
            }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Calls `hook` when a transaction is about to commit; returning false turns
    /// the commit into a rollback (the COMMIT fails with `SQLITE_CONSTRAINT_COMMITHOOK`). Pass nil to
    /// remove it. It coexists with the change log's and ``ValueObservation``'s observers of commits.
    ///
    /// ```swift
    /// db.setCommitHook { print("committing"); return true }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/commit_hook.html>.
    public func setCommitHook(_ hook: (@Sendable () -> Bool)?) {
        updateTransactionHooks { $0.commit = hook }
    }

    /// Calls `hook` whenever a transaction rolls back. Pass nil to remove it.
    ///
    /// ```swift
    /// db.setRollbackHook { print("rolled back") }
    /// ```
    ///
    /// See <https://www.sqlite.org/c3ref/commit_hook.html>.
    public func setRollbackHook(_ hook: (@Sendable () -> Void)?) {
        updateTransactionHooks { $0.rollback = hook }
    }

    /// Changes what the commit and rollback hooks call, registering them with SQLite while
    /// anything is to be called.
    func updateTransactionHooks(_ change: (TransactionHooks) -> Void) {
        guard let handle = try? connection.handle(for: "set a transaction hook") else { return }
        let hooks = self.hooks.transactions ?? TransactionHooks()
        change(hooks)
        guard !hooks.isEmpty else {
            sqlite3_commit_hook(handle, nil, nil)
            sqlite3_rollback_hook(handle, nil, nil)
            self.hooks.transactions = nil
            return
        }
        guard self.hooks.transactions == nil else { return }
        self.hooks.transactions = hooks
        let pointer = Unmanaged.passUnretained(hooks).toOpaque()
        sqlite3_commit_hook(
            handle,
            { hooks in
                guard let hooks else { return 0 }
                return Unmanaged<TransactionHooks>.fromOpaque(hooks).takeUnretainedValue().willCommit() ? 0 : 1
            }, pointer)
        sqlite3_rollback_hook(
            handle,
            { hooks in
                guard let hooks else { return }
                Unmanaged<TransactionHooks>.fromOpaque(hooks).takeUnretainedValue().didRollBack()
            }, pointer)
    }

    /// Unregisters every hook before the boxes they point to go away.
    func removeHooks() {
        guard let handle = try? connection.handle(for: "removeHooks") else { return }
        if hooks.update != nil { sqlite3_update_hook(handle, nil, nil) }
        if hooks.transactions != nil {
            sqlite3_commit_hook(handle, nil, nil)
            sqlite3_rollback_hook(handle, nil, nil)
        }
        if connection.tracker != nil { sqlite3_set_authorizer(handle, nil, nil) }
        hooks = HookBoxes()
        connection.tracker = nil
    }
}
