import CSQLite

/// The tables a statement reads and writes, as SQLite's authorizer reported them while the
/// statement was prepared: a view's tables and a trigger's writes included (SQLite compiles them
/// into the statement). Recorded only on a connection whose accesses are tracked
/// (``TransactionTracker``); a statement prepared before has none, and counts as reading and,
/// unless it is read-only, writing every table.
///
/// See <https://www.sqlite.org/c3ref/set_authorizer.html>.
struct StatementAccess: Sendable, Hashable {
    var read = DatabaseRegion.empty
    var written = DatabaseRegion.empty

    /// Adds what one authorizer call reports.
    mutating func note(action: Int32, table: String?) {
        switch action {
        case SQLITE_READ:
            if let table { read.insert(table: table) }
        case SQLITE_INSERT, SQLITE_UPDATE, SQLITE_DELETE:
            if let table { written.insert(table: table) }
        case SQLITE_CREATE_TABLE, SQLITE_CREATE_TEMP_TABLE, SQLITE_DROP_TABLE, SQLITE_DROP_TEMP_TABLE,
            SQLITE_ALTER_TABLE, SQLITE_CREATE_VIEW, SQLITE_CREATE_TEMP_VIEW, SQLITE_DROP_VIEW, SQLITE_DROP_TEMP_VIEW,
            SQLITE_CREATE_TRIGGER, SQLITE_CREATE_TEMP_TRIGGER, SQLITE_DROP_TRIGGER, SQLITE_DROP_TEMP_TRIGGER,
            SQLITE_ATTACH, SQLITE_DETACH:
            // What any query reads may now mean something else.
            written = .everything
        default:
            break
        }
    }
}
