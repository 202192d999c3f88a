import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension OrphanLink {
    /// `NOT EXISTS` the row's parent; the parent's columns on the left, so its collation and
    /// affinity compare, as SQLite's own check does (`+` takes the child column's affinity off,
    /// which would otherwise convert a TEXT parent's '01' to the child's INTEGER 1); the parent's
    /// index is still searched.
    private var parentMissing: String {
        let match = zip(columns, parentColumns).map { "p.\(quoteIdentifier($1)) = +c.\(quoteIdentifier($0))" }
        return
            "NOT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(parent)) AS p WHERE \(match.joined(separator: " AND ")))"
    }

    private var allSet: String { columns.map { "c.\(quoteIdentifier($0)) IS NOT NULL" }.joined(separator: " AND ") }

    /// The orphans (child key values, then foreign key values) among `rows`; with `first`, at most one.
    func orphans(_ rows: Candidates, _ db: Database, first: Bool = false) throws -> [[DatabaseValue]] {
        // No column to compare with: the proof (or `foreign_key_check`, or SQLite's COMMIT) decides.
        guard hasParentColumns else { return [] }
        let selected =
            first
            ? "1"
            : (childKey.map { "c.\(quoteIdentifier($0))" } + columns.map { "c.\(quoteIdentifier($0))" })
                .joined(separator: ", ")
        let child = "main.\(quoteIdentifier(child)) AS c"
        let limit = first ? " LIMIT 1" : ""
        var found: [[DatabaseValue]] = []
        func run(_ sql: SQL) throws -> Bool {
            found += try Self.rows(sql, db)
            return first && !found.isEmpty
        }
        switch rows {
        case .whole:
            _ = try run(SQL(sql: "SELECT \(selected) FROM \(child) WHERE \(allSet) AND \(parentMissing)\(limit)"))
        case .written(let keys):
            // Each row by its key: one search of the child's key index per row.
            let on = childKey.enumerated().map { "c.\(quoteIdentifier($1)) = k.column\($0 + 1)" }
            for chunk in Self.chunks(keys, width: childKey.count) {
                let sql = SQL(
                    sql: "SELECT \(selected) FROM (\(Self.values(chunk.count, width: childKey.count))) AS k "
                        + "CROSS JOIN \(child) ON \(on.joined(separator: " AND ")) WHERE \(allSet) AND \(parentMissing)"
                        + limit, arguments: chunk.flatMap { $0 })
                if try run(sql) { break }
            }
        case .childrenOf(let parentKeys):
            // The deleted parents' keys as one bound list: SQLite searches the child's index on
            // its foreign key columns for each, or scans the child once without one. A key of
            // several columns joins the list (a row value `IN` would scan the child table).
            guard childrenByKey, let places = parentKeyPlaces else { break }
            let on = columns.enumerated().map { "c.\(quoteIdentifier($1)) = k.column\($0 + 1)" }.joined(
                separator: " AND ")
            for chunk in Self.chunks(parentKeys.map { key in places.map { key[$0] } }, width: columns.count) {
                let list = Self.values(chunk.count, width: columns.count)
                let sql = SQL(
                    sql: columns.count == 1
                        ? "SELECT \(selected) FROM \(child) WHERE c.\(quoteIdentifier(columns[0])) IN (\(list)) "
                            + "AND \(parentMissing)\(limit)"
                        : "SELECT \(selected) FROM (\(list)) AS k CROSS JOIN \(child) ON \(on) "
                            + "WHERE \(parentMissing)\(limit)",
                    arguments: chunk.flatMap { $0 })
                if try run(sql) { break }
            }
        }
        return found
    }

    /// The written rows that can be orphans by this key, whose rows are then read. For a key of
    /// one column in a STRICT table (which stores a value as the change carries it), the value a
    /// row ends with is one a change of the batch set it to, or the one it had before the batch
    /// (whose parent was present then, and is searched for if deleted since): so only the rows
    /// whose change set a value whose parent is missing, and the inserts that set none (a default),
    /// are suspects, and the parents are looked up once per distinct value instead of reading
    /// every row. Otherwise every written row is (last-writer-wins per column can leave a
    /// composite key with a pair of values no single change carried).
    func suspects(among rows: ArraySlice<WrittenRow>, _ db: Database) throws -> [[DatabaseValue]] {
        guard columns.count == 1, childIsStrict, childrenByKey else { return rows.map(\.key) }
        // The distinct values first; the rows of a value without a parent (rare) after.
        var values: Set<DatabaseValue> = []
        var suspects: [[DatabaseValue]] = []
        for row in rows {
            if let value = row.value(of: columns[0]) {
                if value != .null { values.insert(value) }
            } else if row.change.operation == .insert {
                suspects.append(row.key)
            }
        }
        guard !values.isEmpty else { return suspects }
        var missing: Set<DatabaseValue> = []
        let match = "p.\(quoteIdentifier(parentColumns[0])) = k.column1"
        for chunk in Self.chunks(values.map { [$0] }, width: 1) {
            let rows = try Self.rows(
                SQL(
                    sql: "SELECT k.column1 FROM (\(Self.values(chunk.count, width: 1))) AS k WHERE NOT EXISTS "
                        + "(SELECT 1 FROM main.\(quoteIdentifier(parent)) AS p WHERE \(match))",
                    arguments: chunk.flatMap { $0 }), db)
            for row in rows { missing.insert(row[0]) }
        }
        guard !missing.isEmpty else { return suspects }
        for row in rows {
            if let value = row.value(of: columns[0]), missing.contains(value) { suspects.append(row.key) }
        }
        return suspects
    }

    /// Rows to search among.
    enum Candidates {
        case whole
        /// Child rows by their key values.
        case written([[DatabaseValue]])
        /// The children of parent rows by the parent's key values (in its key's order).
        case childrenOf([[DatabaseValue]])
    }

    /// The rows of a query, their values in order. Not kept in the connection's statement cache:
    /// the texts vary with the number of rows bound, and a cached statement of each size would
    /// stay for the connection's life.
    private static func rows(_ sql: SQL, _ db: Database) throws -> [[DatabaseValue]] {
        let statement = try db.makeStatement(sql.text)
        try statement.bind(StatementArguments(sql.arguments))
        return try RowCursor(statement: statement, arguments: sql.arguments).toArray().map { row in
            try (0..<row.count).map { try row.decode(DatabaseValue.self, at: $0) }
        }
    }

    /// At most 1,000 rows and 30,000 bound values per statement (SQLite's default limit is 32,766).
    private static func chunks(_ rows: [[DatabaseValue]], width: Int) -> [ArraySlice<[DatabaseValue]>] {
        let size = max(1, min(1_000, 30_000 / max(width, 1)))
        return stride(from: 0, to: rows.count, by: size).map { rows[$0..<min($0 + size, rows.count)] }
    }

    /// `VALUES (?, ?), (?, ?), …`: `count` rows of `width` parameters.
    private static func values(_ count: Int, width: Int) -> String {
        let row = "(" + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
        return "VALUES " + Array(repeating: row, count: count).joined(separator: ", ")
    }
}
