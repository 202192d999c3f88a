import OfflineStoreSQLite
import SyncProtocol

/// One entry of a store's change log as ``ChangeLogReader`` reads it from the files alone: which
/// row of which table changed, how, when and where. Unlike ``PendingChange`` it carries no values
/// (the log holds keys and clocks only) and no column names for the key (the reader has no
/// declared schema).
///
/// ```swift
/// for change in try ChangeLogReader.entries(in: db, pendingOnly: true, limit: 20) {
///     print(change.sequence ?? "-", change.table, change.operation, change.key, change.columns)
/// }
/// ```
package struct LoggedChange: Sendable, Hashable {
    /// The entry's place in the local log (what ``ChangeLog/markPushed(_:upTo:)`` takes); nil for a
    /// change applied from another site, which is never pushed back.
    package var sequence: Int64?
    /// Where the change was made: this device's 16-byte site id in lowercase hex for local changes;
    /// for changes from other sites the log's number for that site as `#N`, since this version of
    /// the metadatabase records no ids of other sites.
    package var site: String
    package var clock: ChangeClock
    package var table: String
    /// The primary-key values in key order: one value for a one-column key, one per column for a
    /// composite key.
    package var key: [DatabaseValue]
    package var operation: PendingChange.Operation
    /// For an update the changed column; empty for an insert or a delete (which concern the whole row).
    package var columns: [String]
    /// Whether the change waits to be pushed (a local change after the last acknowledged push).
    package var isPending: Bool

    package init(
        sequence: Int64?, site: String, clock: ChangeClock, table: String, key: [DatabaseValue],
        operation: PendingChange.Operation, columns: [String], isPending: Bool
    ) {
        self.sequence = sequence
        self.site = site
        self.clock = clock
        self.table = table
        self.key = key
        self.operation = operation
        self.columns = columns
        self.isPending = isPending
    }
}
