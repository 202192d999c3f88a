/// What went wrong in the change log: the metadatabase, row identity of synced tables, clocks.
public struct ChangeLogError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// A synced table's primary key cannot identify a row across devices.
        case unsuitableRowIdentity
        /// A clock from another site lies too far in the future.
        case clockTooFarInFuture
        /// A change from another site is malformed (unknown key columns, wrong type, bad site id).
        case invalidChange
        /// The metadatabase belongs to another store, or cannot be opened or migrated.
        case metadatabase
        /// A batch after the first in ``ChangeLog/apply(batches:to:afterEach:)`` could not be applied
        /// whole: the transaction was rolled back, and none of the call's batches is applied.
        case batchesRolledBack
    }

    public var kind: Kind
    public var message: String
    public var fix: String?
    public var table: String?

    init(_ kind: Kind, table: String? = nil, _ message: String, fix: String? = nil) {
        self.kind = kind
        self.table = table
        self.message = message
        self.fix = fix
    }

    public var description: String {
        "change log error\(table.map { " (table \($0))" } ?? ""): \(message)" + (fix.map { ". Fix: \($0)" } ?? "")
    }
}
