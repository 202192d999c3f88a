import CSQLite

/// Owns one `sqlite3*`. Statements keep it alive, so SQLite's connection is
/// released (with `sqlite3_close_v2`) only after the last statement is finalized.
///
/// See <https://www.sqlite.org/c3ref/close.html>.
@usableFromInline
final class ConnectionHandle {
    // Read before every statement step; the owning types are non-Sendable, so accesses never overlap.
    @usableFromInline @exclusivity(unchecked) private(set) var pointer: OpaquePointer?
    let showsArguments: Bool
    /// How many `transaction`/outermost `savepoint` calls are running: while positive, a
    /// connection back in autocommit mode means SQLite rolled the transaction back.
    @exclusivity(unchecked) var managedTransactionDepth = 0
    /// Set once something observes this connection's commits (``TransactionTracker``).
    @exclusivity(unchecked) var tracker: TransactionTracker?

    init(path: String, flags: Int32, showsArguments: Bool) throws(DatabaseError) {
        self.showsArguments = showsArguments
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let extended = opened.map { sqlite3_extended_errcode($0) } ?? code
            let system = opened.map { sqlite3_system_errno($0) } ?? 0
            sqlite3_close_v2(opened)
            throw DatabaseError(
                resultCode: ResultCode(rawValue: extended), message: "cannot open database at \(path): \(message)",
                systemErrorNumber: system != 0 ? system : nil)
        }
        pointer = opened
        sqlite3_extended_result_codes(opened, 1)
    }

    deinit {
        sqlite3_close_v2(pointer)
    }

    @inlinable var isOpen: Bool { pointer != nil }

    /// The live handle, or a misuse error naming what was attempted on a closed connection.
    func handle(for action: @autoclosure () -> String) throws(DatabaseError) -> OpaquePointer {
        guard let pointer else {
            throw .misuse("\(action()) on a closed connection: open a new Database")
        }
        return pointer
    }

    /// Closes now when nothing else holds statements; otherwise SQLite finishes
    /// closing when the last statement is finalized (its "zombie" state).
    func close() throws(DatabaseError) {
        guard let pointer else { throw .misuse("close() called twice on the same connection") }
        let code = sqlite3_close_v2(pointer)
        guard code == SQLITE_OK else { throw lastError(code: code) }
        self.pointer = nil
    }

    /// The error SQLite reports for `code`, with its current message.
    func lastError(code: Int32, sql: String? = nil, arguments: [DatabaseValue]? = nil) -> DatabaseError {
        guard let pointer else {
            return DatabaseError(resultCode: ResultCode(rawValue: code), message: "connection closed", sql: sql)
        }
        var extended = sqlite3_extended_errcode(pointer)
        if extended & 0xFF != code & 0xFF { extended = code }
        // Only where an operating system call failed; otherwise the errno is stale.
        let system =
            [SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN].contains(code & 0xFF) ? sqlite3_system_errno(pointer) : 0
        return DatabaseError(
            resultCode: ResultCode(rawValue: extended), message: String(cString: sqlite3_errmsg(pointer)),
            sql: sql, arguments: arguments, showsArguments: showsArguments,
            systemErrorNumber: system != 0 ? system : nil)
    }
}

/// A valid pointer to an empty C string: SQLite reads a NULL text pointer as SQL NULL, not as ''.
var emptyCString: UnsafePointer<CChar> {
    UnsafeRawPointer(("" as StaticString).utf8Start).assumingMemoryBound(to: CChar.self)
}
