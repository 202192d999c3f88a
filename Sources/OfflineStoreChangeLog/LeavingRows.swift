import Foundation
import OfflineStoreSQLite

/// The rows a pull page names as having left the device's read scope (Protocol/README.md §17.3),
/// which the apply removes from the store before the page's changes, as if they had never
/// arrived: no delete is recorded, and each row's versions go with it, so that the row comes back
/// whole when it enters the scope again.
///
/// A change of such a row that this store made and has not pushed yet cannot be pushed any more
/// (its row is gone, and the server would refuse it): `keepUnpushed` keeps it, in the apply's
/// transaction, before the row goes (the sync engine keeps it as a refused outgoing change).
///
/// ```swift
/// let leaving = LeavingRows(rows: [LeavingRow(table: "remindersLists", primaryKey: ["id": .text(id)])]) { entry, db in
///     try keepRefused(entry, db)
/// }
/// let outcome = try log.apply(log.prepare(page.changes, leaving: leaving), to: db)
/// ```
package struct LeavingRows: Sendable {
    package var rows: [LeavingRow]
    package var keepUnpushed: @Sendable (PendingEntry, Database) throws -> Void

    package init(rows: [LeavingRow], keepUnpushed: @escaping @Sendable (PendingEntry, Database) throws -> Void) {
        self.rows = rows
        self.keepUnpushed = keepUnpushed
    }
}

/// A row by its table and key, as a pull names a row that left the scope.
package struct LeavingRow: Sendable, Hashable {
    package var table: String
    package var primaryKey: [String: DatabaseValue]

    package init(table: String, primaryKey: [String: DatabaseValue]) {
        self.table = table
        self.primaryKey = primaryKey
    }
}
