import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Whether the app has triggers of its own (in `main` or TEMP; the store's `ostore_` ones
    /// aside) on one of `tables` (lowercased names): they fire while a batch writes them, and may
    /// write any row. A trigger fires only through a write to its own table, so one on a table
    /// the batch does not write never fires; once one counts, the whole search covers whatever
    /// chain it starts. See <https://www.sqlite.org/schematab.html>.
    static func hasAppTriggers(on tables: Set<String>, _ db: Database) throws -> Bool {
        guard !tables.isEmpty else { return false }
        let names = tables.sorted()
        let list = Array(repeating: "(?)", count: names.count).joined(separator: ", ")
        let unlogged = LogCoverage.unloggedTable + "_"
        let tracker = ChangeTracker.triggerPrefix
        let sql = SQL(
            sql: """
                WITH written(name) AS (VALUES \(list))
                SELECT EXISTS (
                    SELECT 1 FROM main.sqlite_schema WHERE type = 'trigger'
                        AND tbl_name COLLATE NOCASE IN (SELECT name FROM written)
                        AND substr(name, 1, \(unlogged.count)) <> ?
                    UNION ALL
                    SELECT 1 FROM temp.sqlite_schema WHERE type = 'trigger'
                        AND tbl_name COLLATE NOCASE IN (SELECT name FROM written)
                        AND substr(name, 1, \(tracker.count)) <> ?)
                """, arguments: names.map { .text($0) } + [.text(unlogged), .text(tracker)])
        return try db.fetchValue(Bool.self, sql) ?? true
    }
}
