/// What SQLite does to a child row when its parent key is deleted or updated.
/// See <https://www.sqlite.org/foreignkeys.html#fk_actions>.
public enum ForeignKeyAction: String, Sendable, Hashable, CaseIterable {
    case noAction = "NO ACTION"
    case restrict = "RESTRICT"
    case setNull = "SET NULL"
    case setDefault = "SET DEFAULT"
    case cascade = "CASCADE"
}

/// A foreign key: child columns of this table referencing key columns of a parent table.
public struct ForeignKeyDefinition: Sendable, Hashable {
    public var columns: [String]
    public var parentTable: String
    public var parentColumns: [String]
    public var onDelete: ForeignKeyAction
    public var onUpdate: ForeignKeyAction

    public init(
        columns: [String], parentTable: String, parentColumns: [String],
        onDelete: ForeignKeyAction = .noAction, onUpdate: ForeignKeyAction = .noAction
    ) {
        self.columns = columns
        self.parentTable = parentTable
        self.parentColumns = parentColumns
        self.onDelete = onDelete
        self.onUpdate = onUpdate
    }
}
