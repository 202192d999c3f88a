import OfflineStore

/// The partial states the verifier puts databases in: what an external `DROP`, a wiped ledger or
/// a half-run stage leaves behind.
enum DatabaseDamage {
    /// Drops a table, then deletes the rows left pointing at it (and at those rows, and so on), as
    /// if every foreign key cascaded: the database stays consistent, with the table and what
    /// depended on it gone.
    static func dropTable(_ name: String, in db: Database) throws {
        // SQLite ignores this pragma inside a transaction: it is set before BEGIN.
        try db.execute(sql: "PRAGMA foreign_keys = OFF")
        defer { try? db.execute(sql: "PRAGMA foreign_keys = ON") }
        try db.transaction { db in
            try db.execute("DROP TABLE \(identifier: name)")
            try deleteOrphans(db)
        }
    }

    /// Deletes the migration ledger, as an older tool or a manual clean-up would.
    static func wipeLedger(_ db: Database) throws {
        try db.execute("DROP TABLE IF EXISTS \(identifier: DatabaseContents.ledgerTable)")
    }

    /// Forgets that the stage at `position` ran, so the migrator runs it again on a database it
    /// already migrated.
    static func forgetStage(at position: Int, _ db: Database) throws {
        try db.execute("DELETE FROM \(identifier: DatabaseContents.ledgerTable) WHERE position = \(position)")
    }

    /// Deletes every row whose foreign key points at a missing row or table, until none is left.
    private static func deleteOrphans(_ db: Database) throws {
        var deleted = true
        while deleted {
            deleted = false
            for table in try db.tableNames() where !table.lowercased().hasPrefix("ostore_") {
                for foreignKey in try db.foreignKeys(on: table) {
                    let child = quoteIdentifier(table)
                    let childColumns = foreignKey.originColumns.map { "\(child).\(quoteIdentifier($0))" }
                    var condition = childColumns.map { "\($0) IS NOT NULL" }.joined(separator: " AND ")
                    if try db.tableExists(foreignKey.destinationTable) {
                        let parentKey = try db.columns(in: foreignKey.destinationTable)
                            .filter { $0.primaryKeyPosition > 0 }.sorted {
                                $0.primaryKeyPosition < $1.primaryKeyPosition
                            }
                            .map(\.name)
                        let parentColumns = foreignKey.destinationColumns.enumerated().map { offset, column in
                            column ?? (offset < parentKey.count ? parentKey[offset] : "rowid")
                        }
                        let matches = zip(parentColumns, childColumns).map {
                            "\"parent\".\(quoteIdentifier($0)) = \($1)"
                        }
                        condition +=
                            " AND NOT EXISTS (SELECT 1 FROM \(quoteIdentifier(foreignKey.destinationTable)) AS \"parent\" "
                            + "WHERE \(matches.joined(separator: " AND ")))"
                    }
                    try db.execute(sql: "DELETE FROM \(child) WHERE \(condition)")
                    if db.changesCount > 0 { deleted = true }
                }
            }
        }
    }
}
