import OfflineStoreSQLite

/// A table in the normal form used for fingerprints and comparisons: column-level constraints
/// folded into table-level lists, expressions normalised, effective collations resolved,
/// everything sorted. Two declarations that build the same SQLite table normalise equally.
package struct NormalizedTable: Hashable, Sendable {
    package struct NormalizedColumn: Hashable, Sendable {
        package var name: String
        package var type: String
        var isNotNull: Bool
        var defaultSQL: String?
        var collation: String
        package var isAutoincrement: Bool
    }

    struct NormalizedIndex: Hashable, Sendable {
        var name: String
        var isUnique: Bool
        /// `name DESC COLLATE X` per key column, upper-cased.
        var columns: [String]
        var condition: String?
    }

    var name: String
    var kind: String
    var sync: SyncMode
    var isStrict: Bool
    var isWithoutRowID: Bool
    var columns: [NormalizedColumn]
    package var primaryKey: [String]
    var uniqueConstraints: [[String]]
    var checks: [String]
    var foreignKeys: [String]
    var indexes: [NormalizedIndex]

    var key: String { name.lowercased() }

    package func column(_ name: String) -> NormalizedColumn? {
        columns.first { $0.name.lowercased() == name.lowercased() }
    }

    /// The lines of the canonical text for this table.
    var canonicalLines: [String] {
        var lines: [String] = []
        var header = "table \(quoteIdentifier(name)) \(kind) \(sync.rawValue)"
        if isStrict { header += " strict" }
        if isWithoutRowID { header += " without-rowid" }
        lines.append(header)
        for column in columns {
            var line = "  column \(quoteIdentifier(column.name)) \(column.type.isEmpty ? "-" : column.type)"
            if column.isNotNull { line += " not-null" }
            if let defaultSQL = column.defaultSQL { line += " default \(defaultSQL)" }
            if column.collation != "BINARY" { line += " collate \(column.collation)" }
            if column.isAutoincrement { line += " autoincrement" }
            lines.append(line)
        }
        if !primaryKey.isEmpty { lines.append("  primary-key (\(primaryKey.joined(separator: ", ")))") }
        for unique in uniqueConstraints { lines.append("  unique (\(unique.joined(separator: ", ")))") }
        for check in checks { lines.append("  check (\(check))") }
        for foreignKey in foreignKeys { lines.append("  foreign-key \(foreignKey)") }
        for index in indexes {
            var line = "  index \(quoteIdentifier(index.name))\(index.isUnique ? " unique" : "")"
            line += " (\(index.columns.joined(separator: ", ")))"
            if let condition = index.condition { line += " where \(condition)" }
            lines.append(line)
        }
        return lines
    }
}

extension TableDefinition {
    /// The normal form; the definition must be resolved (not `.sql`).
    package func normalized() -> NormalizedTable {
        let upperName: (String) -> String = { $0.uppercased() }
        var columnCollations: [String: String] = [:]
        var normalizedColumns: [NormalizedTable.NormalizedColumn] = []
        var keyColumns = primaryKey.map(upperName)
        var uniques = uniqueConstraints.map { $0.map(upperName) }
        var allChecks = checks.map(SQLScanner.normalizedExpression)
        var allForeignKeys = foreignKeys
        for column in columns {
            let collation = column.collation?.uppercased() ?? "BINARY"
            columnCollations[column.name.uppercased()] = collation
            if column.isPrimaryKey { keyColumns = [column.name.uppercased()] }
            if column.isUnique { uniques.append([column.name.uppercased()]) }
            allChecks += column.checks.map(SQLScanner.normalizedExpression)
            if let reference = column.reference { allForeignKeys.append(reference) }
        }
        for column in columns {
            normalizedColumns.append(
                NormalizedTable.NormalizedColumn(
                    name: column.name, type: column.type.rawValue,
                    // SQLite lets a rowid table's non-INTEGER key hold NULL unless NOT NULL is
                    // written; declarations always write it, so every key column counts as NOT NULL.
                    isNotNull: column.isNotNull || keyColumns.contains(column.name.uppercased()),
                    defaultSQL: column.defaultValue.map { Self.normalizedDefault($0.sql) },
                    collation: columnCollations[column.name.uppercased()] ?? "BINARY",
                    isAutoincrement: column.isAutoincrement))
        }
        var kindText = "table"
        if case .fts5(let ftsOptions) = kind {
            let unindexed = columns.filter { unindexedColumns.contains($0.name) }.map { $0.name + " unindexed" }
            let options = ftsOptions.map { "\($0.name.lowercased())=\($0.value)" }.sorted()
            kindText = "fts5(" + (options + unindexed).joined(separator: ", ") + ")"
        }
        let normalizedIndexes = indexes.map { index in
            NormalizedTable.NormalizedIndex(
                name: index.name, isUnique: index.isUnique,
                columns: index.columns.map { indexed in
                    let collation =
                        indexed.collation?.uppercased() ?? columnCollations[indexed.name.uppercased()] ?? "BINARY"
                    return indexed.name.uppercased() + (indexed.isDescending ? " DESC" : "")
                        + (collation == "BINARY" ? "" : " COLLATE \(collation)")
                },
                condition: index.condition.map(SQLScanner.normalizedExpression))
        }
        return NormalizedTable(
            name: name, kind: kindText, sync: sync, isStrict: options.contains(.strict),
            isWithoutRowID: options.contains(.withoutRowID),
            columns: normalizedColumns.sorted { $0.name.lowercased() < $1.name.lowercased() },
            primaryKey: keyColumns,
            uniqueConstraints: uniques.sorted { $0.joined(separator: ",") < $1.joined(separator: ",") },
            checks: allChecks.sorted(),
            foreignKeys: allForeignKeys.map { foreignKey in
                "(\(foreignKey.columns.map(upperName).joined(separator: ", "))) references "
                    + "\(foreignKey.parentTable.uppercased()) (\(foreignKey.parentColumns.map(upperName).joined(separator: ", ")))"
                    + " on-delete \(foreignKey.onDelete.rawValue) on-update \(foreignKey.onUpdate.rawValue)"
            }.sorted(),
            indexes: normalizedIndexes.sorted { $0.name.lowercased() < $1.name.lowercased() })
    }

    /// `PRAGMA table_info` reports a default as written; `(0)` and `0` mean the same thing.
    static func normalizedDefault(_ sql: String) -> String {
        var tokens = SQLScanner.tokens(sql)
        while tokens.count >= 2, tokens.first?.text == "(",
            SQLScanner.closingParenthesis(in: tokens, from: 0) == tokens.count - 1
        {
            tokens = Array(tokens.dropFirst().dropLast())
        }
        return SQLScanner.normalized(tokens[...])
    }
}
