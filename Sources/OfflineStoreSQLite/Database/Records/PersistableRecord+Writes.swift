/// Writes of a record by its primary key: update (all columns, some, or those that changed since
/// a copy), save, upsert, delete, exists. Each statement is prepared once per connection and
/// kept; a change-logged table records only the columns whose value changed.
///
/// ```swift
/// var player = try Player.fetchOne(db, key: 1)!
/// let before = player
/// player.score += 10
/// try player.updateChanges(db, from: before)  // UPDATE players SET score = ? WHERE id = ?
/// try Player(id: 2, name: "Arthur", score: 0).upsert(db)
/// ```
///
/// See <https://www.sqlite.org/lang_update.html> and <https://www.sqlite.org/lang_upsert.html>.
extension PersistableRecord {
    /// Updates every column of the record's row; throws ``DatabaseError/recordNotFound`` when no
    /// row has its key.
    public func update(_ db: Database) throws {
        try db.withEncodedRecord(self) { record, plan in
            guard try db.updateRecord(record, plan, only: nil) else { throw db.recordNotFound(record, plan) }
        }
    }

    /// Updates `columns` of the record's row (names as the record encodes them); throws
    /// ``DatabaseError/recordNotFound`` when no row has its key.
    public func update(_ db: Database, columns chosen: some Sequence<String>) throws {
        let wanted = Set(chosen.map { $0.lowercased() })
        try db.withEncodedRecord(self) { record, plan in
            let unknown = wanted.subtracting(record.columns.map { $0.lowercased() })
            guard unknown.isEmpty else {
                throw DatabaseError.misuse(
                    "\(Self.self) encodes no column \(unknown.sorted().joined(separator: ", ")) of "
                        + Self.databaseTableName)
            }
            let indices = plan.otherIndices.filter { wanted.contains(record.columns[$0].lowercased()) }
            guard try db.updateRecord(record, plan, only: indices) else { throw db.recordNotFound(record, plan) }
        }
    }

    /// Updates the columns whose values differ from `original`'s (a copy fetched before the
    /// change); nothing when none does. Returns whether it wrote. Both must have the same key.
    @discardableResult
    public func updateChanges(_ db: Database, from original: Self) throws -> Bool {
        var before = PersistenceContainer()
        try original.encode(to: &before)
        return try db.withEncodedRecord(self) { record, plan in
            guard before.columns == record.columns,
                plan.keyIndices.allSatisfy({ before.values[$0] == record.values[$0] })
            else {
                throw DatabaseError.misuse(
                    "updateChanges(from:) needs the record's original copy: its key or its columns differ; delete "
                        + "and insert to change a key")
            }
            let changed = plan.otherIndices.filter { before.values[$0] != record.values[$0] }
            guard !changed.isEmpty else { return false }
            guard try db.updateRecord(record, plan, only: changed) else { throw db.recordNotFound(record, plan) }
            return true
        }
    }

    /// Updates the record's row, or inserts it when no row has its key.
    public func save(_ db: Database) throws {
        let updated = try db.withEncodedRecord(self) { record, plan in try db.updateRecord(record, plan, only: nil) }
        if !updated { try insert(db) }
    }

    /// Inserts the record, or, when a row has its key, updates that row's other columns
    /// (`INSERT … ON CONFLICT (key) DO UPDATE`): one statement, which a change log records as an
    /// update of the columns whose values changed, not as a delete and an insert.
    public func upsert(_ db: Database) throws {
        try db.withEncodedRecord(self) { record, plan in
            let statement = try plan.upsertStatement(db)
            try statement.bind(positional: record.values)
            try statement.runToCompletion(arguments: record.values)
        }
    }

    /// Deletes the record's row; whether there was one.
    @discardableResult
    public func delete(_ db: Database) throws -> Bool {
        try db.withEncodedRecord(self) { record, plan in
            try plan.table.run(.delete, key: plan.key(of: record.values), db)
        }
    }

    /// Whether a row has the record's key.
    public func exists(_ db: Database) throws -> Bool {
        try db.withEncodedRecord(self) { record, plan in
            try plan.table.run(.exists, key: plan.key(of: record.values), db)
        }
    }
}

extension Database {
    /// Encodes `record` into the connection's reused container and gives it with the plan of the
    /// record's type for the columns it encoded.
    func withEncodedRecord<Record: PersistableRecord, Result>(
        _ record: Record, _ body: (_ encoded: PersistenceContainer, _ plan: RecordWritePlan) throws -> Result
    ) throws -> Result {
        var container = recordScratch
        recordScratch = PersistenceContainer()
        defer {
            container.removeAll()
            recordScratch = container
        }
        try record.encode(to: &container)
        return try body(container, try recordWritePlan(for: Record.self, columns: container.columns))
    }

    /// `UPDATE table SET … WHERE key` of the plan's other columns, or of those at `only`; whether
    /// a row had the key. A record of key columns alone writes nothing: its row only needs to exist.
    func updateRecord(_ record: PersistenceContainer, _ plan: RecordWritePlan, only: [Int]?) throws -> Bool {
        let set = only ?? plan.otherIndices
        guard !set.isEmpty else {
            return try plan.table.run(.exists, key: plan.key(of: record.values), self)
        }
        let statement: Statement
        if only == nil || set == plan.otherIndices {
            statement = try plan.updateStatement(self)
        } else {
            statement = try cachedStatement(
                "UPDATE \(quoteIdentifier(plan.table.name)) SET "
                    + set.map { "\(quoteIdentifier(record.columns[$0])) = ?" }.joined(separator: ", ")
                    + " WHERE \(plan.table.keyCondition)")
        }
        var parameter = 1
        for index in set {
            try statement.bind(record.values[index], toParameter: parameter)
            parameter += 1
        }
        for index in plan.keyIndices {
            try statement.bind(record.values[index], toParameter: parameter)
            parameter += 1
        }
        // The record's values, for an error's message (the statement binds them in its own order).
        try statement.runToCompletion(arguments: record.values)
        return changesCount > 0
    }

    func recordNotFound(_ record: PersistenceContainer, _ plan: RecordWritePlan) -> DatabaseError {
        DatabaseError(
            resultCode: .notFound,
            message: "no row of \(plan.table.name) has the key of this record; insert it first, or save or upsert it",
            arguments: plan.key(of: record.values), showsArguments: configuration.publicStatementArguments
        )
    }
}
