import OfflineStoreSQLite

/// Whether the sync engine replicates a table's rows or keeps them on this device only.
public enum SyncMode: String, Sendable, Hashable {
    /// Every local write is recorded in the change log and pushed; the table needs a globally
    /// unique, non-rowid primary key (UUID text or blob).
    case synced
    /// Device-local state (caches, UI state); never recorded, never pushed.
    case localOnly = "local-only"
}

/// Table options. See <https://www.sqlite.org/stricttables.html> and
/// <https://www.sqlite.org/withoutrowid.html>.
public struct TableOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Column types are enforced; only INTEGER, REAL, TEXT, BLOB and ANY are allowed.
    public static let strict = TableOptions(rawValue: 1)
    /// The primary key is the storage key; there is no rowid.
    public static let withoutRowID = TableOptions(rawValue: 2)
}

/// One option of an FTS5 table, such as `tokenize = 'porter unicode61'`.
/// See <https://www.sqlite.org/fts5.html#fts5_table_creation_and_initialization>.
public struct FTS5Option: Sendable, Hashable {
    public var name: String
    public var value: String

    public static func tokenize(_ tokenizer: String) -> FTS5Option { FTS5Option(name: "tokenize", value: tokenizer) }
    public static func prefix(_ lengths: String) -> FTS5Option { FTS5Option(name: "prefix", value: lengths) }
    /// An external-content table: the FTS index reads column values from this table.
    public static func content(_ table: String) -> FTS5Option { FTS5Option(name: "content", value: table) }
    public static func contentRowID(_ column: String) -> FTS5Option {
        FTS5Option(name: "content_rowid", value: column)
    }
    public static func detail(_ level: String) -> FTS5Option { FTS5Option(name: "detail", value: level) }
}

/// The declaration of one table: its columns, constraints and indexes, built with a readable
/// Swift builder. Raw SQL is the escape hatch for expressions (defaults, checks, partial
/// index conditions) and, with ``init(sql:sync:indexes:)``, for a whole table.
///
/// ```swift
/// TableDefinition("reminders", options: [.strict]) {
///     Column("id", .text).primaryKey()
///     Column("title", .text).notNull().check("length(title) > 0")
///     Column("listID", .text).notNull()
///     Index("reminders_listID", on: "listID")
/// }
/// TableDefinition(fts5: "reminderSearch", columns: ["title", "notes"], unindexed: ["reminderID"])
/// ```
///
/// See <https://www.sqlite.org/lang_createtable.html>.
public struct TableDefinition: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        case table
        /// An FTS5 virtual table; its columns are untyped and it has no constraints or indexes.
        case fts5(options: [FTS5Option])
        /// A table declared by its CREATE TABLE statement, resolved when the schema is loaded.
        case sql(String)
    }

    public var name: String
    public var kind: Kind
    public var sync: SyncMode
    public var options: TableOptions
    public var columns: [Column]
    /// A composite primary key; a single-column key is declared on the column.
    public var primaryKey: [String]
    public var uniqueConstraints: [[String]]
    public var checks: [String]
    public var foreignKeys: [ForeignKeyDefinition]
    public var indexes: [Index]
    /// FTS5 columns that are stored but not indexed.
    public var unindexedColumns: Set<String>

    public init(
        _ name: String, sync: SyncMode = .synced, options: TableOptions = [],
        @TableBuilder _ elements: () -> [TableElement]
    ) {
        self.name = name
        self.kind = .table
        self.sync = sync
        self.options = options
        columns = []
        primaryKey = []
        uniqueConstraints = []
        checks = []
        foreignKeys = []
        indexes = []
        unindexedColumns = []
        for element in elements() {
            switch element {
            case .column(let column): columns.append(column)
            case .index(let index): indexes.append(index)
            case .primaryKey(let keyColumns): primaryKey = keyColumns
            case .unique(let uniqueColumns): uniqueConstraints.append(uniqueColumns)
            case .check(let expression): checks.append(expression)
            case .foreignKey(let foreignKey): foreignKeys.append(foreignKey)
            }
        }
    }

    /// An FTS5 virtual table. See <https://www.sqlite.org/fts5.html>.
    public init(
        fts5 name: String, columns: [String], unindexed: [String] = [], options: [FTS5Option] = [],
        sync: SyncMode = .localOnly
    ) {
        self.name = name
        self.kind = .fts5(options: options)
        self.sync = sync
        self.options = []
        self.columns = (unindexed + columns).map { Column($0, ColumnType(rawValue: "")) }
        primaryKey = []
        uniqueConstraints = []
        checks = []
        foreignKeys = []
        indexes = []
        unindexedColumns = Set(unindexed)
    }

    /// The escape hatch: a table declared by its `CREATE TABLE` statement. The statement is run
    /// on a scratch in-memory database when the schema loads and read back into the model, so it
    /// compares with live databases like any other declaration.
    public init(sql: String, sync: SyncMode = .synced, indexes: [Index] = []) {
        name = ""
        kind = .sql(sql)
        self.sync = sync
        options = []
        columns = []
        primaryKey = []
        uniqueConstraints = []
        checks = []
        foreignKeys = []
        self.indexes = indexes
        unindexedColumns = []
    }

    public var isFTS5: Bool {
        if case .fts5 = kind { return true }
        return false
    }
}

/// The pieces a ``TableDefinition`` builder accepts.
public enum TableElement: Sendable, Hashable {
    case column(Column)
    case index(Index)
    case primaryKey([String])
    case unique([String])
    case check(String)
    case foreignKey(ForeignKeyDefinition)
}

/// A composite primary key for the builder: `PrimaryKey("listID", "tagID")`.
public struct PrimaryKey: Sendable, Hashable {
    public var columns: [String]
    public init(_ columns: String...) { self.columns = columns }
}

/// A table-level UNIQUE constraint for the builder: `Unique("listID", "name")`.
public struct Unique: Sendable, Hashable {
    public var columns: [String]
    public init(_ columns: String...) { self.columns = columns }
}

/// A table-level CHECK constraint for the builder: `Check("startsAt <= endsAt")`.
public struct Check: Sendable, Hashable {
    public var expression: String
    public init(_ expression: String) { self.expression = expression }
}

/// A table-level (possibly composite) foreign key for the builder:
/// `ForeignKey(["listID"], references: "remindersLists", ["id"], onDelete: .cascade)`.
public struct ForeignKey: Sendable, Hashable {
    public var definition: ForeignKeyDefinition
    public init(
        _ columns: [String], references parentTable: String, _ parentColumns: [String],
        onDelete: ForeignKeyAction = .noAction, onUpdate: ForeignKeyAction = .noAction
    ) {
        definition = ForeignKeyDefinition(
            columns: columns, parentTable: parentTable, parentColumns: parentColumns, onDelete: onDelete,
            onUpdate: onUpdate)
    }
}

/// Builds the element list of a ``TableDefinition``.
@resultBuilder
public enum TableBuilder {
    public static func buildExpression(_ column: Column) -> [TableElement] { [.column(column)] }
    public static func buildExpression(_ index: Index) -> [TableElement] { [.index(index)] }
    public static func buildExpression(_ key: PrimaryKey) -> [TableElement] { [.primaryKey(key.columns)] }
    public static func buildExpression(_ unique: Unique) -> [TableElement] { [.unique(unique.columns)] }
    public static func buildExpression(_ check: Check) -> [TableElement] { [.check(check.expression)] }
    public static func buildExpression(_ key: ForeignKey) -> [TableElement] { [.foreignKey(key.definition)] }
    public static func buildBlock(_ parts: [TableElement]...) -> [TableElement] { parts.flatMap { $0 } }
    public static func buildOptional(_ part: [TableElement]?) -> [TableElement] { part ?? [] }
    public static func buildEither(first part: [TableElement]) -> [TableElement] { part }
    public static func buildEither(second part: [TableElement]) -> [TableElement] { part }
    public static func buildArray(_ parts: [[TableElement]]) -> [TableElement] { parts.flatMap { $0 } }
}
