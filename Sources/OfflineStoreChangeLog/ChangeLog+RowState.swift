import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// The version of one entry of a row in the log, nil when the log has none.
    func version(_ tableID: Int, _ key: DatabaseValue, _ entry: LoggedColumn, _ db: Database) throws -> ChangeVersion? {
        try db.cachedStatement(Self.versionSQL).withFirstRow(binding: [
            .integer(Int64(tableID)), key, .text(entry.stored),
        ]) {
            row in
            guard let row else { return nil }
            return ChangeVersion(
                clock: try row.decode(at: 0), site: try row.decode(Data?.self, at: 1) ?? identity.siteID)
        }
    }

    private static let versionSQL = """
        SELECT c.clock, s.siteID FROM ostore_meta.ostore_changes AS c
        LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
        WHERE c.tableID = ? AND c.pk = ? AND c.columnName = ?
        """

    /// Whether the row is present (with `existence`; nil without), and every version the log
    /// holds for it (``RowVersions``): one statement for the row's whole range of the log's
    /// index, instead of one lookup per column.
    func rowState(
        _ target: AppliedTable, _ keyValues: [DatabaseValue], _ tableID: Int, _ key: DatabaseValue,
        existence: Bool, _ db: Database
    ) throws -> (exists: Bool?, versions: RowVersions) {
        let statement = try existence ? target.rowStateStatement(db) : target.versionsStatement(db)
        defer { statement.reset() }
        let keyCount = existence ? keyValues.count : 0
        if existence {
            for (index, value) in keyValues.enumerated() { try statement.bind(value, toParameter: index + 1) }
        }
        try statement.bind(.integer(Int64(tableID)), toParameter: keyCount + 1)
        try statement.bind(key, toParameter: keyCount + 2)
        // The entry columns follow the existence column when there is one.
        let first = existence ? 1 : 0
        var exists: Bool? = existence ? false : nil
        var versions = RowVersions()
        while try statement.step(arguments: nil) {
            if existence { exists = try statement.value(at: 0) == .integer(1) }
            // A row without entries comes as one row of NULLs (the outer join): nothing follows.
            guard let (entry, version) = try loggedVersion(statement, at: first) else { break }
            versions[entry] = version
        }
        return (exists, versions)
    }

    /// A log entry and its version from the current row of `statement`, whose columns
    /// from `first` are `columnName, clock, siteID` (the site's id, NULL for this device); nil
    /// when there is no entry there.
    private func loggedVersion(_ statement: Statement, at first: Int) throws -> (
        entry: LoggedColumn, version: ChangeVersion
    )? {
        guard case .text(let column) = try statement.value(at: first),
            case .integer(let clock) = try statement.value(at: first + 1)
        else { return nil }
        let siteID: Data
        if case .blob(let bytes) = try statement.value(at: first + 2) {
            siteID = bytes
        } else {
            siteID = identity.siteID
        }
        return (LoggedColumn(stored: column), ChangeVersion(clock: clock, site: siteID))
    }

    /// The log's entries for every row of the page (its distinct keys, which ``prepare(_:)``
    /// found), read by one statement per table (the keys bound as one JSON array) instead of one
    /// per change, kept in a ``PageLog``. Only keys the log stores as ASCII text without quotes,
    /// backslashes or control characters are read so: SQLite compares them byte for byte as Swift
    /// compares ASCII strings (a number may equal a value of another type, and Swift equates
    /// canonically equivalent Unicode strings), and they go into JSON as they are; the others read
    /// their row when applied.
    /// See <https://www.sqlite.org/json1.html#jeach>.
    func readPageLog(_ batch: PreparedChanges, _ db: Database) throws -> PageLog {
        let rows = batch.rows
        var versions = [RowVersions](repeating: RowVersions(), count: rows.repeated.count)
        for table in rows.keys {
            // A table the log has no number for has no entries yet (the number is made when the
            // first one is written).
            guard
                let tableID = try db.fetchValue(
                    Int.self, "SELECT id FROM ostore_meta.ostore_tables WHERE name = \(table.table)")
            else { continue }
            let statement = try db.cachedStatement(Self.pageEntriesSQL)
            defer { statement.reset() }
            try statement.bind(.integer(Int64(tableID)), toParameter: 1)
            try statement.bind(.text(table.json), toParameter: 2)
            while try statement.step(arguments: nil) {
                guard case .integer(let position) = try statement.value(at: 0),
                    let (entry, version) = try loggedVersion(statement, at: 1)
                else { continue }
                versions[table.slots[Int(position)]][entry] = version
            }
        }
        return PageLog(slots: rows.slots, versions: versions, repeated: rows.repeated)
    }

    /// The entries (the key's place in the array, column name, clock, site id) of the keys in a JSON
    /// array, `?2`, of the table numbered `?1`; the array drives the join (CROSS JOIN), one index
    /// search per key.
    private static let pageEntriesSQL = """
        SELECT k.key, c.columnName, c.clock, s.siteID FROM json_each(?2) AS k
        CROSS JOIN ostore_meta.ostore_changes AS c ON c.tableID = ?1 AND c.pk = k.value
        LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
        """
}
