import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Forgets the rows a replacing download's pages gave (``ReplacingDownloadPage``): a download
    /// starting again from nothing gives its own.
    ///
    /// ```swift
    /// try log.forgetDownloadedRows(db)  // the server refused the cursor: downloading again
    /// ```
    package func forgetDownloadedRows(_ db: Database) throws {
        try db.execute("DELETE FROM \(identifier: Metadatabase.schemaName).ostore_downloaded")
    }

    /// Keeps the rows `batch`'s changes name as given by the replacing download, in the apply's
    /// transaction; with its last page, returns every row of the synced tables and of the stash
    /// that no page gave and that has no change waiting to be pushed, and forgets the rows given.
    func rowsNotDownloaded(after batch: PreparedChanges, _ db: Database) throws -> [LeavingRow] {
        guard let page = batch.replacing else { return [] }
        let meta = quoteIdentifier(Metadatabase.schemaName)
        let insert = try db.cachedStatement(
            "INSERT OR IGNORE INTO \(meta).ostore_downloaded (tableName, pk) VALUES (?1, ?2)")
        for change in batch.changes {
            guard let row = downloadedKey(table: change.table, primaryKey: change.primaryKey) else { continue }
            try insert.run(binding: [.text(row.table), row.key])
        }
        guard page.isLast else { return [] }
        var rows: [LeavingRow] = []
        let pushed = try pushedSequence(db)
        for table in schema.tables where table.sync == .synced {
            let keyColumns = ChangeTracker.keyColumns(of: table)
            let key = ChangeTracker.keyExpression(keyColumns, row: "t")
            let selected = keyColumns.map { "t.\(quoteIdentifier($0))" }.joined(separator: ", ")
            let tableID = try trackedTableID(table.name, db)
            let notGiven = try db.fetchAll(
                SQL(
                    sql: """
                        SELECT \(selected) FROM main.\(quoteIdentifier(table.name)) AS t
                        WHERE NOT EXISTS (SELECT 1 FROM \(meta).ostore_downloaded AS d
                                          WHERE d.tableName = ?1 AND d.pk = \(key))
                          AND NOT EXISTS (SELECT 1 FROM \(meta).ostore_changes AS c
                                          WHERE c.tableID = ?2 AND c.pk = \(key) AND c.site = 0 AND c.seq > ?3)
                        """,
                    arguments: [.text(table.name.lowercased()), .integer(Int64(tableID)), .integer(pushed)]))
            for row in notGiven {
                var primaryKey: [String: DatabaseValue] = [:]
                for (index, column) in keyColumns.enumerated() {
                    primaryKey[column] = try row.decode(DatabaseValue.self, at: index)
                }
                rows.append(LeavingRow(table: table.name, primaryKey: primaryKey))
            }
        }
        var stashed = Set<LeavingRow>()
        for row in try db.fetchAll("SELECT change FROM \(identifier: Metadatabase.schemaName).ostore_stash") {
            let json: String = try row.decode(at: 0)
            guard let change = try? JSONDecoder().decode(IncomingChange.self, from: Data(json.utf8)),
                let given = downloadedKey(table: change.table, primaryKey: change.primaryKey),
                try db.fetchValue(
                    Int.self,
                    """
                    SELECT 1 FROM \(identifier: Metadatabase.schemaName).ostore_downloaded
                    WHERE tableName = \(given.table) AND pk = \(given.key)
                    """) == nil
            else { continue }
            stashed.insert(LeavingRow(table: change.table, primaryKey: change.primaryKey))
        }
        try forgetDownloadedRows(db)
        return rows + stashed
    }

    /// A row as the replacing download keeps it: its table's name in lower case, and its key as
    /// the log stores it for a table this schema syncs, or its values in the order of their
    /// columns' names for a table of a newer schema (whose rows only the stash holds). Nil for a
    /// key that is not its table's (a change the apply refuses).
    func downloadedKey(table: String, primaryKey: [String: DatabaseValue]) -> (table: String, key: DatabaseValue)? {
        guard let definition = schema.table(named: table), definition.sync == .synced else {
            let names = primaryKey.keys.sorted { $0.lowercased() < $1.lowercased() }
            return (table.lowercased(), Self.loggedKey(names.map { primaryKey[$0]! }))
        }
        guard
            let values = try? Self.keyValues(
                of: primaryKey, keyColumns: ChangeTracker.keyColumns(of: definition), table: definition.name)
        else { return nil }
        return (definition.name.lowercased(), Self.loggedKey(values))
    }
}
