/// One table as records use it, per connection: its primary key, read from the schema once, and
/// the statements by key, prepared on first use, so a read, check or delete by key builds no SQL.
final class RecordTable {
    let name: String
    /// The key's columns as the table names them, in key order.
    let keyColumns: [String]
    /// `k1 = ? AND k2 = ?` over ``keyColumns``.
    let keyCondition: String
    private var select: Statement?
    private var exists: Statement?
    private var delete: Statement?

    /// What a statement by key does.
    enum Operation {
        case select, exists, delete
    }

    init(name: String, db: Database) throws {
        self.name = name
        keyColumns = try db.columns(in: name).filter { $0.primaryKeyPosition > 0 }
            .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
        guard !keyColumns.isEmpty else {
            throw DatabaseError.misuse(
                "table \(name) has no PRIMARY KEY: its records cannot be updated, deleted or fetched by key; declare "
                    + "one in its TableDefinition")
        }
        keyCondition = keyColumns.map { "\(quoteIdentifier($0)) = ?" }.joined(separator: " AND ")
    }

    /// The statement of `operation`, with `key` (in key order) bound.
    func statement(_ operation: Operation, key: [DatabaseValue], _ db: Database) throws -> Statement {
        let statement: Statement
        switch operation {
        case .select:
            statement = try select ?? db.makeStatement("SELECT * FROM \(quoteIdentifier(name)) WHERE \(keyCondition)")
            select = statement
        case .exists:
            statement = try exists ?? db.makeStatement("SELECT 1 FROM \(quoteIdentifier(name)) WHERE \(keyCondition)")
            exists = statement
        case .delete:
            statement = try delete ?? db.makeStatement("DELETE FROM \(quoteIdentifier(name)) WHERE \(keyCondition)")
            delete = statement
        }
        try statement.bind(positional: key)
        return statement
    }

    /// Whether a row has `key`, or (for `.delete`) whether one was deleted.
    func run(_ operation: Operation, key: [DatabaseValue], _ db: Database) throws -> Bool {
        let statement = try statement(operation, key: key, db)
        if operation == .delete {
            try statement.runToCompletion(arguments: key)
            return db.changesCount > 0
        }
        let cursor = RowCursor(statement: statement, arguments: key)
        return try withExtendedLifetime(cursor) { try cursor.next() != nil }
    }
}

extension Database {
    /// `table` as records use it; throws for a table without a primary key.
    func recordTable(_ table: String) throws -> RecordTable {
        if let known = recordTables[table] { return known }
        let made = try RecordTable(name: table, db: self)
        recordTables[table] = made
        return made
    }
}
