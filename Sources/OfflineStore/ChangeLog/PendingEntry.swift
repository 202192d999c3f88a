/// A pending change as the queue reads it, its values by position: what
/// ``ChangeLog/pendingChanges(_:after:limit:_:)`` hands a caller that converts changes into its own
/// type (the sync engine's wire changes) without the dictionaries of ``PendingChange``.
package struct PendingEntry {
    package var sequence: Int64
    package var table: String
    /// The key's columns and values, in key order.
    package var keyColumns: [String]
    package var keyValues: [DatabaseValue]
    package var operation: PendingChange.Operation
    /// The columns it carries (every column of an insert, the changed one of an update, none for a
    /// delete) and their values as they are now, in the same order.
    package var columns: [String]
    package var values: [DatabaseValue]
    package var clock: HybridTimestamp
}

/// What reading one batch of the queue keeps per table: its definition and key, and the statement
/// reading a row by key (normalising a definition to find its key, or building the query, cost
/// more than reading the row).
struct PendingTables {
    let schema: SchemaSnapshot
    private var tables: [Int64: PendingTable?] = [:]
    /// The last table asked for: a batch's entries are mostly of one table, in runs.
    private var last: (id: Int64, table: PendingTable?)?

    init(schema: SchemaSnapshot) { self.schema = schema }

    /// The table with that number in the log; nil for one no longer in the schema. `name` reads
    /// the log's name for it, only the first time.
    mutating func table(_ id: Int64, named name: () throws -> DatabaseValue, _ db: Database) throws -> PendingTable? {
        if let last, last.id == id { return last.table }
        let table: PendingTable?
        if let known = tables[id] {
            table = known
        } else {
            guard case .text(let name) = try name() else { return nil }
            table = try schema.table(named: name).map { try PendingTable($0, db) }
            tables[id] = table
        }
        last = (id, table)
        return table
    }
}

/// One table of the schema as the queue reads it.
final class PendingTable {
    let definition: TableDefinition
    let keyColumns: [String]
    /// `SELECT * FROM main."table" WHERE "key" = ?1 AND …`: a row as it is now, for a push.
    let read: Statement

    init(_ definition: TableDefinition, _ db: Database) throws {
        self.definition = definition
        keyColumns = ChangeTracker.keyColumns(of: definition)
        read = try db.cachedStatement(
            "SELECT * FROM main.\(quoteIdentifier(definition.name)) WHERE \(ChangeLog.keyMatch(keyColumns))")
    }

    /// The change the current row of `entries` (`seq, tableID, name, pk, columnName, clock`) stands
    /// for, with the row's values as they are now; nil for a row changed and then deleted, which
    /// is pushed as its delete alone.
    func entry(_ entries: Statement) throws -> PendingEntry? {
        guard case .integer(let sequence) = try entries.value(at: 0) else { return nil }
        let keyValues = try LoggedKey.values(try entries.value(at: 3), columnCount: keyColumns.count)
        guard case .text(let columnName) = try entries.value(at: 4) else { return nil }
        guard case .integer(let packed) = try entries.value(at: 5) else {
            // A clock of 0 would lose every comparison on other sites: refused, as a decode was.
            throw ChangeLogError(
                .metadatabase, table: definition.name, "the change log entry \(sequence) has no integer clock",
                fix: "run `ostore check --db PATH` on the store; its metadatabase may be damaged")
        }
        var entry = PendingEntry(
            sequence: sequence, table: definition.name, keyColumns: keyColumns, keyValues: keyValues,
            operation: .delete, columns: [], values: [], clock: HybridTimestamp(packed: packed) ?? .zero)
        guard columnName != "-" else { return entry }
        for (index, value) in keyValues.enumerated() { try read.bind(value, toParameter: index + 1) }
        defer { read.reset() }
        guard try read.step(arguments: keyValues) else { return nil }
        let names = read.columnNames
        if columnName.isEmpty {
            entry.operation = .insert
            entry.columns = names
            entry.values = try names.indices.map { try read.value(at: $0) }
        } else {
            entry.operation = .update
            entry.columns = [columnName]
            entry.values = [try names.firstIndex(of: columnName).map { try read.value(at: $0) } ?? .null]
        }
        return entry
    }
}
