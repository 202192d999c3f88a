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
    var commit: ClosureBox<@Sendable () -> Bool>?
    var rollback: ClosureBox<@Sendable () -> Void>?
}

final class ClosureBox<Closure> {
    let closure: Closure
    init(_ closure: Closure) { self.closure = closure }
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
    /// the commit into a rollback (the COMMIT fails with `SQLITE_CONSTRAINT_COMMITHOOK`).
    /// See <https://www.sqlite.org/c3ref/commit_hook.html>.
    public func setCommitHook(_ hook: (@Sendable () -> Bool)?) {
        guard let handle = try? connection.handle(for: "setCommitHook") else { return }
        hooks.commit = hook.map { ClosureBox($0) }
        guard let box = hooks.commit else {
            sqlite3_commit_hook(handle, nil, nil)
            return
        }
        sqlite3_commit_hook(
            handle,
            { box in
                guard let box else { return 0 }
                let hook = Unmanaged<ClosureBox<@Sendable () -> Bool>>.fromOpaque(box).takeUnretainedValue().closure
                return hook() ? 0 : 1
            }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Calls `hook` whenever a transaction rolls back.
    /// See <https://www.sqlite.org/c3ref/commit_hook.html>.
    public func setRollbackHook(_ hook: (@Sendable () -> Void)?) {
        guard let handle = try? connection.handle(for: "setRollbackHook") else { return }
        hooks.rollback = hook.map { ClosureBox($0) }
        guard let box = hooks.rollback else {
            sqlite3_rollback_hook(handle, nil, nil)
            return
        }
        sqlite3_rollback_hook(
            handle,
            { box in
                guard let box else { return }
                Unmanaged<ClosureBox<@Sendable () -> Void>>.fromOpaque(box).takeUnretainedValue().closure()
            }, Unmanaged.passUnretained(box).toOpaque())
    }

    /// Unregisters every hook before the boxes they point to go away.
    func removeHooks() {
        guard let handle = try? connection.handle(for: "removeHooks") else { return }
        if hooks.update != nil { sqlite3_update_hook(handle, nil, nil) }
        if hooks.commit != nil { sqlite3_commit_hook(handle, nil, nil) }
        if hooks.rollback != nil { sqlite3_rollback_hook(handle, nil, nil) }
        hooks = HookBoxes()
    }
}
