import OfflineStoreSQLite

/// An index of a table: plain or unique, on columns, optionally partial.
///
/// ```swift
/// Index("reminders_listID", on: "listID")
/// Index("reminders_open", on: "dueAt", where: "isDone = 0")
/// Index("tags_name", on: "name", unique: true)
/// ```
///
/// See <https://www.sqlite.org/lang_createindex.html> and <https://www.sqlite.org/partialindex.html>.
public struct Index: Sendable, Hashable {
    public var name: String
    public var columns: [IndexedColumn]
    public var isUnique: Bool
    /// The WHERE clause of a partial index, as SQL.
    public var condition: String?

    public init(_ name: String, on columns: String..., unique: Bool = false, where condition: String? = nil) {
        self.init(name, columns: columns.map { IndexedColumn($0) }, unique: unique, where: condition)
    }

    public init(_ name: String, columns: [IndexedColumn], unique: Bool = false, where condition: String? = nil) {
        self.name = name
        self.columns = columns
        self.isUnique = unique
        self.condition = condition
    }
}

/// One key column of an index, ascending unless `descending`.
public struct IndexedColumn: Sendable, Hashable, ExpressibleByStringLiteral {
    public var name: String
    public var isDescending: Bool
    /// The collating sequence used by this index column; nil means the column's own.
    public var collation: String?

    public init(_ name: String, descending: Bool = false, collation: String? = nil) {
        self.name = name
        self.isDescending = descending
        self.collation = collation?.uppercased()
    }

    public init(stringLiteral value: String) { self.init(value) }
}
