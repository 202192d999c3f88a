/// A column as a live database describes it (`PRAGMA table_xinfo`).
/// See <https://www.sqlite.org/pragma.html#pragma_table_xinfo>.
public struct ColumnInfo: Sendable, Hashable {
    /// How a column is hidden, if at all.
    public enum Visibility: Int, Sendable {
        case normal = 0
        case hiddenVirtualTable = 1
        case generatedVirtual = 2
        case generatedStored = 3
    }

    public let name: String
    /// The declared type as written (`TEXT`, `INTEGER`, `` for none).
    public let declaredType: String
    public let isNotNull: Bool
    /// The DEFAULT expression as SQL text, if any.
    public let defaultValueSQL: String?
    /// 1-based position in the primary key; 0 when not part of it.
    public let primaryKeyPosition: Int
    public let visibility: Visibility
}

/// An index as a live database describes it (`PRAGMA index_list` and `index_xinfo`).
/// See <https://www.sqlite.org/pragma.html#pragma_index_list>.
public struct IndexInfo: Sendable, Hashable {
    /// Why the index exists.
    public enum Origin: String, Sendable {
        case createIndex = "c"
        case uniqueConstraint = "u"
        case primaryKey = "pk"
    }

    public let name: String
    public let table: String
    public let isUnique: Bool
    public let origin: Origin
    public let isPartial: Bool
    /// Key columns in order; nil entries are expressions.
    public let columns: [String?]
    /// The `CREATE INDEX` statement; nil for automatic indexes.
    public let sql: String?
}

/// A foreign key as a live database describes it (`PRAGMA foreign_key_list`).
/// See <https://www.sqlite.org/pragma.html#pragma_foreign_key_list>.
public struct ForeignKeyInfo: Sendable, Hashable {
    public let id: Int
    /// The referenced (parent) table.
    public let destinationTable: String
    /// Child columns, in key order.
    public let originColumns: [String]
    /// Parent columns, in key order; nil entries mean "the parent's primary key".
    public let destinationColumns: [String?]
    public let onUpdate: String
    public let onDelete: String
}

/// A trigger as stored in the schema table.
public struct TriggerInfo: Sendable, Hashable {
    public let name: String
    public let table: String
    public let sql: String
}
