/// How the writes by key of one record type map its encoded columns to statements: where its key
/// columns are among what it encodes, where the others are, and the statements, prepared on first
/// use. Kept per connection and record type, for as long as the type encodes the same columns, so a
/// write looks nothing up by name.
final class RecordWritePlan {
    let table: RecordTable
    /// The columns as the record encodes them.
    let columns: [String]
    /// The positions in ``columns`` of the key's columns, in key order.
    let keyIndices: [Int]
    /// The positions of the other columns.
    let otherIndices: [Int]
    private var update: Statement?
    private var upsert: Statement?

    init(type: any PersistableRecord.Type, columns: [String], table: RecordTable) throws {
        self.table = table
        self.columns = columns
        let keyIndices = try table.keyColumns.map { keyColumn in
            guard let index = columns.firstIndex(where: { $0.lowercased() == keyColumn.lowercased() }) else {
                throw DatabaseError.misuse(
                    "\(type) encodes no \(keyColumn), a column of the primary key of \(table.name): add it to the "
                        + "record, or check its coding keys")
            }
            return index
        }
        self.keyIndices = keyIndices
        otherIndices = columns.indices.filter { !keyIndices.contains($0) }
    }

    /// The record's key values, in key order.
    func key(of values: [DatabaseValue]) -> [DatabaseValue] { keyIndices.map { values[$0] } }

    /// `UPDATE table SET others = ? WHERE key = ?`: the others bound first, then the key.
    func updateStatement(_ db: Database) throws -> Statement {
        if let update { return update }
        let statement = try db.makeStatement(
            "UPDATE \(quoteIdentifier(table.name)) SET "
                + otherIndices.map { "\(quoteIdentifier(columns[$0])) = ?" }.joined(separator: ", ")
                + " WHERE \(table.keyCondition)")
        update = statement
        return statement
    }

    /// `INSERT … ON CONFLICT (key) DO UPDATE SET others = excluded.others`, every column bound in
    /// encoding order.
    func upsertStatement(_ db: Database) throws -> Statement {
        if let upsert { return upsert }
        let action =
            otherIndices.isEmpty
            ? "NOTHING"
            : "UPDATE SET "
                + otherIndices.map { "\(quoteIdentifier(columns[$0])) = excluded.\(quoteIdentifier(columns[$0]))" }
                .joined(separator: ", ")
        let statement = try db.makeStatement(
            "INSERT INTO \(quoteIdentifier(table.name)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) "
                + "VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", "))) "
                + "ON CONFLICT (\(table.keyColumns.map(quoteIdentifier).joined(separator: ", "))) DO \(action)")
        upsert = statement
        return statement
    }
}

extension Database {
    /// The plan of `type` encoding `columns`: the last one the type used when it encoded the same.
    func recordWritePlan(for type: any PersistableRecord.Type, columns: [String]) throws -> RecordWritePlan {
        let id = ObjectIdentifier(type)
        if let plan = recordWritePlans[id], plan.columns == columns { return plan }
        let plan = try RecordWritePlan(type: type, columns: columns, table: try recordTable(type.databaseTableName))
        recordWritePlans[id] = plan
        return plan
    }
}
