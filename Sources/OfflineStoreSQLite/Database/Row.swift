import Foundation

/// Column names of a result and a lookup table from name to index, built once per statement.
@usableFromInline
final class RowColumns: Sendable {
    let names: [String]
    /// Lowercased names, for SQLite's case-insensitive matching.
    private let foldedNames: [String]
    /// Hash lookups, built only for wide results where a scan would be slow.
    private let indexByName: [String: Int]?
    private let indexByFoldedName: [String: Int]?

    init(names: [String]) {
        self.names = names
        foldedNames = names.map { $0.lowercased() }
        if names.count > 16 {
            var exact: [String: Int] = [:]
            var folded: [String: Int] = [:]
            // The leftmost column wins, as in SQLite's own name resolution.
            for (index, name) in names.enumerated().reversed() {
                exact[name] = index
                folded[foldedNames[index]] = index
            }
            indexByName = exact
            indexByFoldedName = folded
        } else {
            indexByName = nil
            indexByFoldedName = nil
        }
    }

    /// Exact match first; SQLite names are case-insensitive, so fall back to that.
    func index(of name: String) -> Int? {
        if let indexByName, let indexByFoldedName {
            return indexByName[name] ?? indexByFoldedName[name.lowercased()]
        }
        // For the usual handful of columns, comparing strings (two machine words
        // each for short names) beats hashing the name.
        if let index = names.firstIndex(of: name) { return index }
        let folded = name.lowercased()
        return foldedNames.firstIndex(of: folded)
    }
}

/// The values of a row that no longer depends on a statement.
@usableFromInline
final class DetachedRow: Sendable {
    let values: [DatabaseValue]
    let columns: RowColumns

    init(values: [DatabaseValue], columns: RowColumns) {
        self.values = values
        self.columns = columns
    }
}

/// One result row: values by index (0-based) or by column name.
///
/// A row read from a cursor is a view of the statement's current row: it is
/// valid until the cursor moves on, after which reading it is a misuse error.
/// ``copy()`` keeps one. Rows from `fetchAll`/`fetchOne` are copies.
///
/// ```swift
/// if let row = try db.fetchOne("SELECT id, title FROM reminders WHERE id = \(id)") {
///     let title: String = try row["title"]
///     let id = try row.decode(UUID.self, at: 0)
/// }
/// ```
public struct Row {
    /// Where the values live.
    @usableFromInline enum Source {
        /// The current row of a statement, not retained: the counter tells whether it still is.
        case statement(Unmanaged<Statement>, RowGeneration)
        /// Values copied out of SQLite.
        case detached(DetachedRow)
    }

    @usableFromInline let source: Source
    /// The statement's row count when this row was current (0 for a detached row).
    @usableFromInline let generation: UInt64

    /// The current row of `statement`.
    @inlinable
    init(statement: Statement) {
        source = .statement(Unmanaged.passUnretained(statement), statement.rowGeneration)
        generation = statement.rowGeneration.current
    }

    /// The row of `statement` whose row count was `generation`: stale unless the statement is still on it.
    @inlinable
    init(statement: Unmanaged<Statement>, rowGeneration: RowGeneration, generation: UInt64) {
        source = .statement(statement, rowGeneration)
        self.generation = generation
    }

    /// A detached row of values (for tests and for building rows by hand).
    /// Throws a misuse error unless there is exactly one value per column.
    public init(columns: [String], values: [DatabaseValue]) throws {
        guard columns.count == values.count else {
            throw DatabaseError.misuse(
                "a Row needs one value per column: \(columns.count) columns, \(values.count) values")
        }
        self.init(values: values, columns: RowColumns(names: columns))
    }

    private init(values: [DatabaseValue], columns: RowColumns) {
        source = .detached(DetachedRow(values: values, columns: columns))
        generation = 0
    }

    /// The statement, while this row is still its current row; nil for a detached or stale row.
    var statement: Statement? {
        guard case .statement(let statement, let rowGeneration) = source, rowGeneration.current == generation
        else { return nil }
        return statement.takeUnretainedValue()
    }

    /// Whether this row viewed a statement that has moved on (or gone away).
    private var isStale: Bool {
        guard case .statement(_, let rowGeneration) = source else { return false }
        return rowGeneration.current != generation
    }

    private var detached: DetachedRow? {
        guard case .detached(let detached) = source else { return nil }
        return detached
    }

    /// Column names; empty for a stale row, whose statement may be gone.
    var columns: RowColumns {
        statement?.columns ?? detached?.columns ?? RowColumns(names: [])
    }

    /// Number of columns.
    public var count: Int { columns.names.count }

    /// Column names in order.
    public var columnNames: [String] { columns.names }

    /// The index of a column by name (exact, then case-insensitive), or nil.
    public func index(ofColumn name: String) -> Int? { columns.index(of: name) }

    /// Whether the row has a column of that name.
    public func hasColumn(_ name: String) -> Bool { columns.index(of: name) != nil }

    /// The stored value at a 0-based index.
    public func databaseValue(at index: Int) throws -> DatabaseValue {
        if isStale { throw staleRowError() }
        try checkIndex(index)
        if let statement { return try statement.value(at: index) }
        return detached?.values[index] ?? .null
    }

    /// The stored value of a named column.
    public func databaseValue(named name: String) throws -> DatabaseValue {
        try databaseValue(at: requireIndex(ofColumn: name))
    }

    /// The value at a 0-based index, converted exactly (see ``DatabaseValueConvertible``).
    @inlinable
    public func decode<Value: DatabaseValueConvertible>(_ type: Value.Type = Value.self, at index: Int) throws
        -> Value
    {
        // Hot path: read the current row of a live statement in place, specialized for Value.
        if case .statement(let unmanaged, let rowGeneration) = source, rowGeneration.current == generation,
            let pointer = unmanaged._withUnsafeGuaranteedRef({ statement -> OpaquePointer? in
                guard statement.connection.isOpen,
                    UInt(bitPattern: index) < UInt(bitPattern: statement.columnCount)
                else { return nil }
                return statement.pointer
            })
        {
            do {
                return try Value.decode(
                    from: StatementColumn(statement: pointer, index: Int32(truncatingIfNeeded: index)))
            } catch {
                // One call, not an inlined cast: keeps this hot path small enough to inline.
                throw contextualized(error, column: index)
            }
        }
        return try decodeDetached(Value.self, at: index)
    }

    /// Copied rows, and the checks (stale row, bad index) the hot path leaves to this one.
    @usableFromInline
    func decodeDetached<Value: DatabaseValueConvertible>(_ type: Value.Type, at index: Int) throws -> Value {
        let value = try databaseValue(at: index)
        do {
            return try Value.fromDatabaseValue(value)
        } catch let error as DatabaseError {
            throw contextualized(error, column: index)
        }
    }

    /// The value of a named column, converted exactly.
    @inline(__always)
    public func decode<Value: DatabaseValueConvertible>(_ type: Value.Type = Value.self, column name: String) throws
        -> Value
    {
        try decode(Value.self, at: requireIndex(ofColumn: name))
    }

    /// `let title: String = try row[1]`
    public subscript<Value: DatabaseValueConvertible>(_ index: Int) -> Value {
        get throws { try decode(Value.self, at: index) }
    }

    /// `let title: String = try row["title"]`
    public subscript<Value: DatabaseValueConvertible>(_ name: String) -> Value {
        get throws { try decode(Value.self, column: name) }
    }

    /// All values, in column order.
    public func values() throws -> [DatabaseValue] {
        if isStale { throw staleRowError() }
        return try detached?.values ?? (0..<count).map { try databaseValue(at: $0) }
    }

    /// All values by column name (NULL included, as ``DatabaseValue/null``).
    public func valuesByColumnName() throws -> [String: DatabaseValue] {
        Dictionary(zip(columnNames, try values()), uniquingKeysWith: { first, _ in first })
    }

    /// A copy that stays valid after its cursor moves on.
    public func copy() throws -> Row {
        detached != nil ? self : Row(values: try values(), columns: columns)
    }

    func requireIndex(ofColumn name: String) throws -> Int {
        if isStale { throw staleRowError() }
        guard let index = columns.index(of: name) else {
            throw DatabaseError(
                resultCode: .error,
                message:
                    "no column named '\(name)' in this row (columns: \(columns.names.joined(separator: ", "))); select it or alias it with AS",
                sql: sqlText)
        }
        return index
    }

    @inline(__always)
    private func checkIndex(_ index: Int) throws {
        guard index >= 0, index < columns.names.count else {
            throw DatabaseError(
                resultCode: .range, message: "column index \(index) is out of range 0..<\(columns.names.count)",
                sql: sqlText)
        }
    }

    private var sqlText: String? {
        statement?.sql
    }

    private func staleRowError() -> DatabaseError {
        .misuse("a row was read after its cursor moved on; call row.copy() to keep a row")
    }

    /// A ``DatabaseError`` with the column's context added; any other error as it is.
    @usableFromInline
    func contextualized(_ error: any Error, column index: Int) -> any Error {
        guard let error = error as? DatabaseError else { return error }
        return contextualized(error, column: index)
    }

    /// The error with the column's name and index, and the statement's SQL.
    @usableFromInline
    func contextualized(_ error: DatabaseError, column index: Int) -> DatabaseError {
        let name = index < columns.names.count ? columns.names[index] : "?"
        var result = error.prefixed("column '\(name)' (index \(index))")
        if let statement {
            result = result.with(
                sql: statement.sql, arguments: nil, showsArguments: statement.connection.showsArguments)
        }
        return result
    }
}

@available(*, unavailable, message: "A Row may be a view of a statement; copy its values out first")
extension Row: Sendable {}
