import OfflineStoreSQLite
import SyncProtocol

/// The tables of one schema, declared or read from a live database, with a canonical text and
/// a fingerprint that are stable across runs and platforms.
///
/// ```swift
/// let declared = try RemindersV1.snapshot()
/// let live = try SchemaSnapshot(liveDatabase: db)
/// #expect(live.differences(toReach: declared).isEmpty)
/// print(declared.fingerprint)  // 64 hex digits
/// ```
public struct SchemaSnapshot: Sendable, Hashable {
    /// The declared version; nil for a snapshot of a live database.
    public var version: Schema.Version?
    /// The tables sorted by name, every `.sql` declaration resolved.
    public private(set) var tables: [TableDefinition]
    package let normalizedTables: [NormalizedTable]

    /// Validates and normalises declared tables.
    public init(version: Schema.Version?, tables declaredTables: [TableDefinition]) throws(SchemaError) {
        try self.init(version: version, tables: declaredTables, allowingReservedNames: false)
    }

    /// `allowingReservedNames` is for the library's own schemas (the metadatabase), whose tables
    /// carry the reserved `ostore_` prefix so they can never clash with an app's.
    init(version: Schema.Version?, tables declaredTables: [TableDefinition], allowingReservedNames: Bool)
        throws(SchemaError)
    {
        var resolved: [TableDefinition] = []
        for table in declaredTables { resolved.append(try Self.resolve(table)) }
        resolved.sort { $0.name.lowercased() < $1.name.lowercased() }
        try Self.validate(resolved, allowingReservedNames: allowingReservedNames)
        self.version = version
        tables = resolved
        normalizedTables = resolved.map { $0.normalized() }
    }

    package init(liveTables: [TableDefinition]) {
        version = nil
        tables = liveTables.sorted { $0.name.lowercased() < $1.name.lowercased() }
        normalizedTables = tables.map { $0.normalized() }
    }

    /// The table named `name` (case-insensitive).
    public func table(named name: String) -> TableDefinition? {
        tables.first { $0.name.lowercased() == name.lowercased() }
    }

    /// The canonical text: one line per table, column, constraint and index, in a fixed order;
    /// column order and SQL layout do not matter, anything SQLite would treat differently does.
    public var canonicalText: String { canonicalText(includingSyncModes: true) }

    /// The canonical text; without sync modes it describes only what SQLite stores, so a live
    /// database (whose sync modes only the declaration knows) compares with a declaration.
    public func canonicalText(includingSyncModes: Bool) -> String {
        let lines = normalizedTables.flatMap { table in
            var table = table
            if !includingSyncModes { table.sync = .localOnly }
            return table.canonicalLines
        }
        return (["offline-store-schema 1"] + lines).joined(separator: "\n") + "\n"
    }

    /// The SHA-256 of ``canonicalText``, in lowercase hex.
    public var fingerprint: String { SHA256.hexDigest(canonicalText) }

    private static func resolve(_ table: TableDefinition) throws(SchemaError) -> TableDefinition {
        guard case .sql(let sql) = table.kind else { return table }
        do {
            let scratch = try Database.inMemory()
            try scratch.execute(sql: sql)
            let created = try SchemaSnapshot(liveDatabase: scratch, includingReservedTables: true).tables
            guard created.count == 1, var resolved = created.first else {
                throw SchemaError(
                    .invalidDeclaration,
                    "TableDefinition(sql:) must hold exactly one CREATE TABLE statement; it created \(created.count) tables"
                )
            }
            resolved.sync = table.sync
            resolved.indexes += table.indexes
            return resolved
        } catch let error as SchemaError {
            throw error
        } catch {
            throw SchemaError(
                .invalidDeclaration, "TableDefinition(sql:) could not be run on a scratch database: \(error)")
        }
    }

    private static func validate(_ tables: [TableDefinition], allowingReservedNames: Bool) throws(SchemaError) {
        var tableNames: Set<String> = []
        var indexNames: Set<String> = []
        for table in tables {
            let tableKey = table.name.lowercased()
            func fail(_ message: String, column: String? = nil) -> SchemaError {
                SchemaError(.invalidDeclaration, table: table.name, column: column, message)
            }
            guard !table.name.isEmpty else { throw fail("a table needs a name") }
            guard !tableKey.hasPrefix("sqlite_"), allowingReservedNames || !tableKey.hasPrefix("ostore_") else {
                throw fail("names starting with sqlite_ and ostore_ are reserved; rename the table")
            }
            guard tableNames.insert(tableKey).inserted else {
                throw fail("two models declare this table; each table is declared once per version")
            }
            guard !table.columns.isEmpty else { throw fail("a table needs at least one column") }
            var columnNames: Set<String> = []
            for column in table.columns {
                guard !column.name.isEmpty else { throw fail("a column needs a name") }
                guard columnNames.insert(column.name.lowercased()).inserted else {
                    throw fail("the column is declared twice", column: column.name)
                }
                if table.options.contains(.strict), !column.type.isAllowedInStrictTables {
                    throw fail(
                        "a STRICT table only accepts INTEGER, REAL, TEXT, BLOB or ANY, not \(column.type)",
                        column: column.name)
                }
                if column.isAutoincrement, column.type != .integer || table.options.contains(.withoutRowID) {
                    throw fail("AUTOINCREMENT needs an INTEGER PRIMARY KEY in a rowid table", column: column.name)
                }
                if column.defaultValue == .literal(.null), column.isNotNull {
                    throw fail("a NOT NULL column cannot default to NULL; give a non-NULL DEFAULT", column: column.name)
                }
            }
            let columnKeyCount = table.columns.filter(\.isPrimaryKey).count
            if columnKeyCount > 1 || (columnKeyCount == 1 && !table.primaryKey.isEmpty) {
                throw fail("the table declares more than one primary key; use PrimaryKey(a, b) for a composite key")
            }
            if table.options.contains(.withoutRowID), columnKeyCount == 0, table.primaryKey.isEmpty {
                throw fail("a WITHOUT ROWID table needs a PRIMARY KEY")
            }
            func checkColumns(_ names: [String], _ what: String) throws(SchemaError) {
                guard !names.isEmpty else { throw fail("\(what) names no column") }
                for name in names where !columnNames.contains(name.lowercased()) {
                    throw fail("\(what) names a column the table does not declare", column: name)
                }
            }
            if !table.primaryKey.isEmpty { try checkColumns(table.primaryKey, "PRIMARY KEY") }
            for unique in table.uniqueConstraints { try checkColumns(unique, "UNIQUE") }
            for index in table.indexes {
                guard indexNames.insert(index.name.lowercased()).inserted, !index.name.isEmpty else {
                    throw fail("index \"\(index.name)\" is declared twice (index names are unique per database)")
                }
                guard !index.name.lowercased().hasPrefix("sqlite_"),
                    allowingReservedNames || !index.name.lowercased().hasPrefix("ostore_")
                else {
                    throw fail("index names starting with sqlite_ and ostore_ are reserved; rename \(index.name)")
                }
                try checkColumns(index.columns.map(\.name), "index \(index.name)")
            }
            if table.isFTS5, !table.indexes.isEmpty {
                throw fail("an FTS5 table has no indexes of its own")
            }
            let foreignKeys = table.foreignKeys + table.columns.compactMap(\.reference)
            for foreignKey in foreignKeys {
                try checkColumns(foreignKey.columns, "FOREIGN KEY")
                guard foreignKey.columns.count == foreignKey.parentColumns.count else {
                    throw fail(
                        "the foreign key has \(foreignKey.columns.count) columns but references \(foreignKey.parentColumns.count)",
                        column: foreignKey.columns.first)
                }
                guard let parent = tables.first(where: { $0.name.lowercased() == foreignKey.parentTable.lowercased() })
                else {
                    throw fail(
                        "REFERENCES \(foreignKey.parentTable), a table this schema version does not declare; declare it in the same version",
                        column: foreignKey.columns.first)
                }
                let parentColumns = Set(parent.columns.map { $0.name.lowercased() })
                for parentColumn in foreignKey.parentColumns where !parentColumns.contains(parentColumn.lowercased()) {
                    throw fail(
                        "REFERENCES \(parent.name)(\(parentColumn)), a column \(parent.name) does not declare",
                        column: foreignKey.columns.first)
                }
                // SQLite reports "foreign key mismatch" on the first write unless the parent
                // columns are the parent's primary key or carry a UNIQUE constraint or index.
                let parentNormal = parent.normalized()
                let wanted = foreignKey.parentColumns.map { $0.uppercased() }.sorted()
                let uniqueKeys =
                    [parentNormal.primaryKey] + parentNormal.uniqueConstraints
                    + parent.indexes.filter { $0.isUnique && $0.condition == nil }.map {
                        $0.columns.map { $0.name.uppercased() }
                    }
                guard uniqueKeys.contains(where: { $0.sorted() == wanted }) else {
                    throw fail(
                        "REFERENCES \(parent.name)(\(foreignKey.parentColumns.joined(separator: ", "))), which is "
                            + "neither its primary key nor UNIQUE; reference the key or declare it UNIQUE",
                        column: foreignKey.columns.first)
                }
            }
        }
    }
}
