/// A type built from a row.
///
/// `Decodable` types get ``init(row:)`` for free through the library's own
/// decoder; hot code can write it by hand and read columns by index:
///
/// ```swift
/// struct Reminder: FetchableRecord {
///     var id: Int64, title: String
///     init(row: Row) throws {
///         id = try row.decode(at: 0)
///         title = try row.decode(at: 1)
///     }
/// }
/// let reminders = try Reminder.fetchAll(db, "SELECT id, title FROM reminders")
/// ```
public protocol FetchableRecord {
    init(row: Row) throws
}

extension FetchableRecord {
    /// Streams records; each is decoded as the cursor reaches its row.
    public static func fetchCursor(_ db: Database, _ sql: SQL) throws -> RecordCursor<Self> {
        RecordCursor(rows: try db.fetchCursor(sql))
    }

    /// All records of a query.
    @inlinable
    public static func fetchAll(_ db: Database, _ sql: SQL) throws -> [Self] {
        let rows = try db.fetchCursor(sql)
        var records: [Self] = []
        while let row = try rows.next() {
            records.append(try Self(row: row))
        }
        return records
    }

    /// The first record of a query, or nil.
    public static func fetchOne(_ db: Database, _ sql: SQL) throws -> Self? {
        let cursor = try db.fetchCursor(sql)
        return try withExtendedLifetime(cursor) {
            guard let row = try cursor.next() else { return nil }
            return try Self(row: row)
        }
    }
}

extension FetchableRecord where Self: Decodable {
    /// Decodes the row through ``RowDecoder``: properties by column name.
    // Inlinable so that the record's module specialises `init(from:)` for ``RowDecoder``
    // (its calls to the decoder become direct), as for a hand-written `init(row:)`.
    @inlinable
    public init(row: Row) throws {
        try self.init(from: RowDecoder(row: row))
    }
}
