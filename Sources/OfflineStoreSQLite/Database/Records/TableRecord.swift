/// A type whose values are rows of one table: what fetching, updating and deleting by primary key
/// need. The key's columns are read from the table's schema (`PRAGMA table_info`), once per
/// connection; single-column and composite keys alike.
///
/// ```swift
/// struct Player: Codable, FetchableRecord, PersistableRecord {
///     static let databaseTableName = "players"
///     var id: Int64, name: String, score: Int
/// }
/// let player = try Player.fetchOne(db, key: 1)
/// try Player.deleteAll(db, keys: [2, 3])
/// ```
public protocol TableRecord {
    /// The table the record is stored in.
    static var databaseTableName: String { get }
}

/// A primary key whose columns are named: for a composite key, or to say which column a value is.
///
/// ```swift
/// let tag = try ReminderTag.fetchOne(db, key: ["reminderID": reminder.id, "tagID": tag.id])
/// ```
public typealias RecordKeyValues = [String: any DatabaseValueConvertible]

extension TableRecord {
    /// Whether a row has this single-column primary key.
    public static func exists(_ db: Database, key: some DatabaseValueConvertible) throws -> Bool {
        try db.recordKeyed(
            .exists, Self.databaseTableName, values: db.keyValues(single: key.databaseValue, of: Self.self))
    }

    /// Whether a row has this primary key, its columns named.
    public static func exists(_ db: Database, key: RecordKeyValues) throws -> Bool {
        try db.recordKeyed(.exists, Self.databaseTableName, values: db.keyValues(named: key, of: Self.self))
    }

    /// Deletes the row with this single-column primary key; whether there was one.
    @discardableResult
    public static func deleteOne(_ db: Database, key: some DatabaseValueConvertible) throws -> Bool {
        try db.recordKeyed(
            .delete, Self.databaseTableName, values: db.keyValues(single: key.databaseValue, of: Self.self))
    }

    /// Deletes the row with this primary key, its columns named; whether there was one.
    @discardableResult
    public static func deleteOne(_ db: Database, key: RecordKeyValues) throws -> Bool {
        try db.recordKeyed(.delete, Self.databaseTableName, values: db.keyValues(named: key, of: Self.self))
    }

    /// Deletes the rows with these single-column primary keys; how many there were.
    @discardableResult
    public static func deleteAll<Key: DatabaseValueConvertible>(_ db: Database, keys: some Sequence<Key>) throws -> Int
    {
        var deleted = 0
        for key in keys where try deleteOne(db, key: key) { deleted += 1 }
        return deleted
    }

    /// Deletes the rows with these primary keys, their columns named; how many there were.
    @discardableResult
    public static func deleteAll(_ db: Database, keys: some Sequence<RecordKeyValues>) throws -> Int {
        var deleted = 0
        for key in keys where try deleteOne(db, key: key) { deleted += 1 }
        return deleted
    }
}

extension TableRecord where Self: FetchableRecord {
    /// The record with this single-column primary key, or nil.
    public static func fetchOne(_ db: Database, key: some DatabaseValueConvertible) throws -> Self? {
        try db.fetchRecord(Self.self, values: db.keyValues(single: key.databaseValue, of: Self.self))
    }

    /// The record with this primary key, its columns named, or nil.
    public static func fetchOne(_ db: Database, key: RecordKeyValues) throws -> Self? {
        try db.fetchRecord(Self.self, values: db.keyValues(named: key, of: Self.self))
    }

    /// The records with these single-column primary keys, in the keys' order; keys no row has are
    /// passed over.
    public static func fetchAll<Key: DatabaseValueConvertible>(_ db: Database, keys: some Sequence<Key>) throws
        -> [Self]
    {
        try keys.compactMap { key in try fetchOne(db, key: key) }
    }

    /// The records with these primary keys, their columns named, in the keys' order; keys no row
    /// has are passed over.
    public static func fetchAll(_ db: Database, keys: some Sequence<RecordKeyValues>) throws -> [Self] {
        try keys.compactMap { key in try fetchOne(db, key: key) }
    }
}

/// What a statement by primary key does.
enum RecordKeyedOperation {
    case exists, delete
}

extension Database {
    /// The primary key columns of `table`, in key order; throws for a table without one.
    func primaryKeyColumns(of table: String) throws -> [String] {
        if let known = recordPrimaryKeys[table] { return known }
        let columns = try self.columns(in: table).filter { $0.primaryKeyPosition > 0 }
            .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
        guard !columns.isEmpty else {
            throw DatabaseError.misuse(
                "table \(table) has no PRIMARY KEY: its records cannot be updated, deleted or fetched by key; declare "
                    + "one in its TableDefinition")
        }
        recordPrimaryKeys[table] = columns
        return columns
    }

    /// A single key's value, for a table whose key has one column.
    func keyValues(single value: DatabaseValue, of type: any TableRecord.Type) throws -> [DatabaseValue] {
        let columns = try primaryKeyColumns(of: type.databaseTableName)
        guard columns.count == 1 else {
            throw DatabaseError.misuse(
                "the primary key of \(type.databaseTableName) has \(columns.count) columns "
                    + "(\(columns.joined(separator: ", "))): name them, key: [\"\(columns[0])\": …, …]")
        }
        return [value]
    }

    /// A named key's values in key order; throws naming a column missing or not of the key.
    func keyValues(named key: RecordKeyValues, of type: any TableRecord.Type) throws -> [DatabaseValue] {
        let table = type.databaseTableName
        let columns = try primaryKeyColumns(of: table)
        var byName: [String: DatabaseValue] = [:]
        for (name, value) in key { byName[name.lowercased()] = value.databaseValue }
        if let unknown = key.keys.sorted().first(where: { name in
            !columns.contains { $0.lowercased() == name.lowercased() }
        }) {
            throw DatabaseError.misuse(
                "\(unknown) is not a column of the primary key of \(table) (\(columns.joined(separator: ", ")))")
        }
        return try columns.map { column in
            guard let value = byName[column.lowercased()] else {
                throw DatabaseError.misuse("the key of \(table) misses its column \(column)")
            }
            return value
        }
    }

    /// `WHERE k1 = ? AND k2 = ?` over the table's key columns.
    func keyCondition(_ columns: [String]) -> String {
        columns.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
    }

    /// Runs an existence check or a delete by key, with a cached statement.
    func recordKeyed(_ operation: RecordKeyedOperation, _ table: String, values: [DatabaseValue]) throws -> Bool {
        let condition = keyCondition(try primaryKeyColumns(of: table))
        let statement = try cachedStatement(
            operation == .delete
                ? "DELETE FROM \(quoteIdentifier(table)) WHERE \(condition)"
                : "SELECT 1 FROM \(quoteIdentifier(table)) WHERE \(condition)")
        for (index, value) in values.enumerated() { try statement.bind(value, toParameter: index + 1) }
        if operation == .delete {
            try statement.runToCompletion(arguments: values)
            return changesCount > 0
        }
        let cursor = RowCursor(statement: statement, arguments: values)
        return try withExtendedLifetime(cursor) { try cursor.next() != nil }
    }

    /// The row with this key as a record, with a cached statement.
    func fetchRecord<Record: FetchableRecord & TableRecord>(_ type: Record.Type, values: [DatabaseValue]) throws
        -> Record?
    {
        let table = Record.databaseTableName
        let statement = try cachedStatement(
            "SELECT * FROM \(quoteIdentifier(table)) WHERE \(keyCondition(try primaryKeyColumns(of: table)))")
        for (index, value) in values.enumerated() { try statement.bind(value, toParameter: index + 1) }
        let cursor = RowCursor(statement: statement, arguments: values)
        return try withExtendedLifetime(cursor) {
            guard let row = try cursor.next() else { return nil }
            return try Record(row: row)
        }
    }
}
