import Foundation
import OfflineStore

/// What a scenario compares across a migration: the row keys of every table (to find lost rows),
/// and, across a second migration, the whole schema, ledger and contents (to find any change).
struct DatabaseContents: Equatable {
    /// The rows of one table as identified by its primary key, or by rowid when it has none.
    struct TableKeys: Equatable {
        var table: String
        var keyColumns: [String]
        var keys: Set<[DatabaseValue]>

        var keyDescription: String {
            keyColumns.count == 1 ? keyColumns[0] : "(\(keyColumns.joined(separator: ", ")))"
        }
    }

    /// Row keys per table, by lowercased table name.
    var keys: [String: TableKeys]
    /// Every row of every table (with its rowid when it has one), by lowercased table name.
    var rows: [String: [[DatabaseValue]]]
    var canonicalSchema: String
    /// Every row of the migration ledger.
    var ledger: [[DatabaseValue]]

    static let ledgerTable = "ostore_migrations"

    /// Reads the keys only (`includingRows: false`) or everything.
    init(of db: Database, includingRows: Bool) throws {
        let schema = try SchemaSnapshot(liveDatabase: db)
        canonicalSchema = includingRows ? schema.canonicalText : ""
        keys = [:]
        rows = [:]
        for table in schema.tables {
            if case .sql = table.kind { continue }  // a virtual table that is not FTS5: nothing to read safely
            // An external-content FTS5 index reads its rows from another table, which is checked itself.
            if case .fts5(let options) = table.kind,
                options.contains(where: { $0.name.lowercased() == "content" && !$0.value.isEmpty })
            {
                continue
            }
            let keyColumns = Self.keyColumns(of: table)
            let keyRows = try db.fetchAll(Self.selectKeys(keyColumns, from: table.name)).map { try $0.values() }
            keys[table.name.lowercased()] = TableKeys(table: table.name, keyColumns: keyColumns, keys: Set(keyRows))
            if includingRows {
                let hasRowID = !table.options.contains(.withoutRowID)
                let select =
                    "SELECT \(hasRowID ? "rowid, " : "")* FROM \(quoteIdentifier(table.name)) ORDER BY "
                    + keyColumns.map { $0 == "rowid" ? "rowid" : quoteIdentifier($0) }.joined(separator: ", ")
                rows[table.name.lowercased()] = try db.fetchAll(SQL(sql: select)).map { try $0.values() }
            }
        }
        ledger = []
        if includingRows, try db.tableExists(Self.ledgerTable) {
            ledger = try db.fetchAll("SELECT * FROM \(identifier: Self.ledgerTable) ORDER BY position").map {
                try $0.values()
            }
        }
    }

    /// The primary key columns, or `rowid` for a table without one (and for FTS5 tables).
    static func keyColumns(of table: TableDefinition) -> [String] {
        if table.isFTS5 { return ["rowid"] }
        if let key = table.columns.first(where: \.isPrimaryKey) { return [key.name] }
        return table.primaryKey.isEmpty ? ["rowid"] : table.primaryKey
    }

    static func selectKeys(_ keyColumns: [String], from table: String) -> SQL {
        let columns = keyColumns.map { $0 == "rowid" ? "rowid" : quoteIdentifier($0) }
        return SQL(sql: "SELECT \(columns.joined(separator: ", ")) FROM \(quoteIdentifier(table))")
    }

    /// A key as SQL-like text for reports: `'A1'`, `42`, `('A1', 'T2')`.
    static func render(_ key: [DatabaseValue]) -> String {
        let parts = key.map(render)
        return parts.count == 1 ? parts[0] : "(\(parts.joined(separator: ", ")))"
    }

    static func render(_ value: DatabaseValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let integer): String(integer)
        case .real(let real): String(real)
        case .text(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }

    /// Keys in a stable order for samples.
    static func sorted(_ keys: some Collection<[DatabaseValue]>) -> [[DatabaseValue]] {
        keys.sorted { render($0) < render($1) }
    }
}
