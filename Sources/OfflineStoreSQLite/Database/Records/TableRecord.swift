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
        try db.recordTable(Self.databaseTableName).run(
            .exists, key: db.keyValues(single: key.databaseValue, of: Self.self), db)
    }

    /// Whether a row has this primary key, its columns named.
    public static func exists(_ db: Database, key: RecordKeyValues) throws -> Bool {
        try db.recordTable(Self.databaseTableName).run(.exists, key: db.keyValues(named: key, of: Self.self), db)
    }

    /// Deletes the row with this single-column primary key; whether there was one.
    @discardableResult
    public static func deleteOne(_ db: Database, key: some DatabaseValueConvertible) throws -> Bool {
        try db.recordTable(Self.databaseTableName).run(
            .delete, key: db.keyValues(single: key.databaseValue, of: Self.self), db)
    }

    /// Deletes the row with this primary key, its columns named; whether there was one.
    @discardableResult
    public static func deleteOne(_ db: Database, key: RecordKeyValues) throws -> Bool {
        try db.recordTable(Self.databaseTableName).run(.delete, key: db.keyValues(named: key, of: Self.self), db)
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

    /// Every record of the table, in primary-key order.
    ///
    /// ```swift
    /// let players = try Player.fetchAll(db)
    /// ```
    public static func fetchAll(_ db: Database) throws -> [Self] {
        let table = try db.recordTable(databaseTableName)
        let order = table.keyColumns.map { quoteIdentifier($0) }.joined(separator: ", ")
        return try fetchAll(db, SQL(sql: "SELECT * FROM \(quoteIdentifier(table.name)) ORDER BY \(order)"))
    }
}

extension Database {
    /// A single key's value, for a table whose key has one column.
    func keyValues(single value: DatabaseValue, of type: any TableRecord.Type) throws -> [DatabaseValue] {
        let columns = try recordTable(type.databaseTableName).keyColumns
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
        let columns = try recordTable(table).keyColumns
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

    /// The row with this key as a record.
    func fetchRecord<Record: FetchableRecord & TableRecord>(_ type: Record.Type, values: [DatabaseValue]) throws
        -> Record?
    {
        let statement = try recordTable(Record.databaseTableName).statement(.select, key: values, self)
        let cursor = RowCursor(statement: statement, arguments: values)
        return try withExtendedLifetime(cursor) {
            guard let row = try cursor.next() else { return nil }
            return try Record(row: row)
        }
    }
}
