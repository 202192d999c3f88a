import OfflineStoreSQLite
import SyncProtocol

/// A local change waiting to be pushed: which row of which table, what happened, and the values
/// as they are now (a row inserted then edited is pushed once, with its latest values).
public struct PendingChange: Sendable, Hashable {
    /// The operations of the protocol's changes.
    public typealias Operation = Change.Operation

    /// The change's place in the local log; acknowledge pushes up to it with ``ChangeLog/markPushed(_:upTo:)``.
    public var sequence: Int64
    public var table: String
    /// The row's key, by column name.
    public var primaryKey: [String: DatabaseValue]
    public var operation: Operation
    /// For an insert every column, for an update the changed column; empty for a delete.
    public var columns: [String: DatabaseValue]
    public var clock: ChangeClock
}
