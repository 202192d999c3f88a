import Foundation
import OfflineStoreSQLite

/// The rows of a table that wait in the stash for their parent: orphan resolution takes such a
/// row out of its table and stashes it as an insert with its values, this store's edits included
/// (Protocol/README.md §8.4). The push reads a waiting row's values there, and the apply keeps
/// an insert of a waiting row's key behind it.
enum WaitingRows {
    /// The stash's inserts of `table` by key (in `keyColumns` order), their columns by lowercased
    /// name (SQLite's names compare without case). Only inserts are decoded: the stash's updates
    /// (unknown columns, rows not present yet) may be many, and are no row.
    static func of(_ table: String, keyColumns: [String], _ db: Database) throws
        -> [[DatabaseValue]: [String: DatabaseValue]]
    {
        let stashed = try db.fetchAll(
            String.self,
            SQL(
                sql: "SELECT change FROM \(quoteIdentifier(Metadatabase.schemaName)).ostore_stash "
                    + "WHERE tableName = ? COLLATE NOCASE AND json_extract(change, '$.operation') = 'insert' "
                    + "ORDER BY id",
                arguments: [.text(table)]))
        var rows: [[DatabaseValue]: [String: DatabaseValue]] = [:]
        for json in stashed {
            guard let change = try? JSONDecoder().decode(IncomingChange.self, from: Data(json.utf8)) else { continue }
            let columns = Dictionary(
                change.columns.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
            let key = keyColumns.compactMap { columns[$0.lowercased()] }
            // The first: the row itself; an insert of its key stashed after it waits behind it.
            guard key.count == keyColumns.count, rows[key] == nil else { continue }
            rows[key] = columns
        }
        return rows
    }
}
