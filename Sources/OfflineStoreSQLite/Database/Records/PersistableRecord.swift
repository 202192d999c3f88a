/// A type stored as one row of ``databaseTableName``.
///
/// `Encodable` types get ``encode(to:)`` for free (properties become
/// columns by name); others fill the container by hand.
///
/// ```swift
/// struct Reminder: Codable, FetchableRecord, PersistableRecord {
///     static let databaseTableName = "reminders"
///     var id: UUID, title: String, done: Bool
/// }
/// try Reminder(id: UUID(), title: "Buy milk", done: false).insert(db)
/// ```
///
/// See <https://www.sqlite.org/lang_insert.html>.
public protocol PersistableRecord: TableRecord {
    /// Writes the record's columns, in a stable order.
    func encode(to container: inout PersistenceContainer) throws
}

/// Column names and values of a record about to be written, in order.
public struct PersistenceContainer {
    public private(set) var columns: [String] = []
    public private(set) var values: [DatabaseValue] = []

    public init() {}

    /// Empties the container but keeps its storage, for the next record.
    mutating func removeAll() {
        columns.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
    }

    /// Sets a column's value (a repeated name replaces the earlier value).
    public mutating func set(_ column: String, to value: some DatabaseValueConvertible) {
        set(column, databaseValue: value.databaseValue)
    }

    mutating func set(_ column: String, databaseValue value: DatabaseValue) {
        if let existing = columns.lastIndex(of: column) {
            values[existing] = value
        } else {
            columns.append(column)
            values.append(value)
        }
    }

    /// The value set for a column, if any.
    public subscript(column: String) -> DatabaseValue? {
        columns.firstIndex(of: column).map { values[$0] }
    }
}

/// What an INSERT does when it meets a uniqueness conflict.
/// See <https://www.sqlite.org/lang_conflict.html>.
public enum ConflictResolution: String, Sendable, Hashable {
    case abort = "ABORT"
    case replace = "REPLACE"
    case ignore = "IGNORE"
    case fail = "FAIL"
    case rollback = "ROLLBACK"
}

/// Identifies one prepared INSERT: same table, same columns, same conflict rule.
struct RecordInsertKey: Hashable {
    let table: String
    let columns: [String]
    let conflict: ConflictResolution
}

/// The last INSERT a record type used, checked before hashing a full ``RecordInsertKey``.
struct RecentRecordInsert {
    let key: RecordInsertKey
    let statement: Statement
}

extension PersistableRecord {
    /// Inserts the record; the statement is prepared once per table and column list.
    public func insert(_ db: Database, onConflict conflict: ConflictResolution = .abort) throws {
        // One container per connection, reused: no allocation per record once warm.
        var container = db.recordScratch
        db.recordScratch = PersistenceContainer()
        defer {
            container.removeAll()
            db.recordScratch = container
        }
        try encode(to: &container)
        let statement = try db.recordInsertStatement(
            for: Self.self, table: Self.databaseTableName, columns: container.columns, conflict: conflict)
        guard statement.parameterCount == container.values.count else {
            throw statement.argumentCountError(given: container.values.count, arguments: container.values)
        }
        try statement.bind(positional: container.values)
        try statement.runToCompletion(arguments: container.values)
    }
}

extension PersistableRecord where Self: Encodable {
    public func encode(to container: inout PersistenceContainer) throws {
        let encoder = RecordEncoder(reusing: container)
        container = PersistenceContainer()  // the encoder now holds the only reference to the storage
        try encode(to: encoder)
        container = encoder.container
    }
}

extension Database {
    func recordInsertStatement(
        for type: Any.Type, table: String, columns: [String], conflict: ConflictResolution
    ) throws -> Statement {
        let typeID = ObjectIdentifier(type)
        if let recent = recentRecordInserts[typeID], recent.key.conflict == conflict, recent.key.table == table,
            recent.key.columns == columns
        {
            return recent.statement
        }
        let key = RecordInsertKey(table: table, columns: columns, conflict: conflict)
        let statement = try recordInsertStatement(for: key)
        recentRecordInserts[typeID] = RecentRecordInsert(key: key, statement: statement)
        return statement
    }

    private func recordInsertStatement(for key: RecordInsertKey) throws -> Statement {
        if let statement = recordInsertStatements[key] { return statement }
        guard !key.columns.isEmpty else {
            throw DatabaseError.misuse("a record of \(key.table) encoded no columns; nothing to insert")
        }
        let columnList = key.columns.map(quoteIdentifier).joined(separator: ", ")
        let placeholders = Array(repeating: "?", count: key.columns.count).joined(separator: ", ")
        let statement = try makeStatement(
            "INSERT OR \(key.conflict.rawValue) INTO \(quoteIdentifier(key.table)) (\(columnList)) VALUES (\(placeholders))"
        )
        recordInsertStatements[key] = statement
        return statement
    }
}
