import OfflineStore

/// What the data generator needs to know about a declared table: each column's storage class and
/// constraints, and its foreign keys.
struct TablePlan {
    struct ColumnPlan {
        var name: String
        var key: String { name.lowercased() }
        var storage: StorageClass
        var isNullable: Bool
        var hasDefault: Bool
        /// Part of the primary key.
        var isKey: Bool
        /// The column that makes its key or UNIQUE constraint distinct (never one filled from a parent).
        var isUnique: Bool
        /// Named by a CHECK expression.
        var isChecked: Bool
        var checkNumbers: [Double]
        var checkTexts: [String]
    }

    struct ForeignKeyPlan {
        var columns: [String]
        /// The columns, lowercased.
        var keys: [String] { columns.map { $0.lowercased() } }
        var parentTable: String
        var parentColumns: [String]
        var isSelfReference: Bool
        var isNullable: Bool
        /// Declared only by a later version: most rows point at a parent (as the app's data
        /// would), every fifth keeps its own value (an orphan the later stage must handle).
        var isLaterReference: Bool
    }

    var columns: [ColumnPlan] = []
    var foreignKeys: [ForeignKeyPlan] = []
    var foreignKeyColumns: Set<String> = []

    /// `laterReferences` are foreign keys later versions declare on this table's columns.
    init(_ table: TableDefinition, laterReferences: [ForeignKeyDefinition] = []) {
        let references = table.foreignKeys + table.columns.compactMap(\.reference)
        let keyList = (table.columns.filter(\.isPrimaryKey).map(\.name) + table.primaryKey).map { $0.lowercased() }
        let keyColumns = Set(keyList)
        for reference in references {
            let isNullable = reference.columns.allSatisfy { name in
                guard let column = table.columns.first(where: { $0.name.lowercased() == name.lowercased() })
                else { return false }
                return !column.isNotNull && !keyColumns.contains(column.name.lowercased())
            }
            foreignKeys.append(
                ForeignKeyPlan(
                    columns: reference.columns, parentTable: reference.parentTable,
                    parentColumns: reference.parentColumns,
                    isSelfReference: reference.parentTable.lowercased() == table.name.lowercased(),
                    isNullable: isNullable, isLaterReference: false))
            foreignKeyColumns.formUnion(reference.columns.map { $0.lowercased() })
        }
        for reference in laterReferences
        where reference.parentTable.lowercased() != table.name.lowercased()
            && reference.columns.allSatisfy({ !foreignKeyColumns.contains($0.lowercased()) })
        {
            foreignKeys.append(
                ForeignKeyPlan(
                    columns: reference.columns, parentTable: reference.parentTable,
                    parentColumns: reference.parentColumns, isSelfReference: false, isNullable: true,
                    isLaterReference: true))
        }
        let tableChecks = table.checks.map(CheckLiterals.init)
        let columnChecks = table.columns.flatMap { column in
            column.checks.map { (column.name.lowercased(), CheckLiterals($0)) }
        }
        func checksNaming(_ key: String) -> [CheckLiterals] {
            tableChecks.filter { $0.identifiers.contains(key) }
                + columnChecks.filter { $0.0 == key || $0.1.identifiers.contains(key) }.map(\.1)
        }
        // One column per key or UNIQUE constraint gets distinct values, which makes the whole set
        // distinct: a column filled from a parent row is never it, an unchecked one is preferred.
        var uniqueSets: [[String]] = [keyList]
        uniqueSets += table.columns.filter(\.isUnique).map { [$0.name] } + table.uniqueConstraints
        uniqueSets += table.indexes.filter(\.isUnique).map { $0.columns.map(\.name) }
        var uniqueColumns: Set<String> = []
        for set in uniqueSets.map({ $0.map { $0.lowercased() } }) where !set.isEmpty {
            let candidates = set.filter { !foreignKeyColumns.contains($0) }
            guard !candidates.contains(where: uniqueColumns.contains),
                let chosen = candidates.first(where: { checksNaming($0).isEmpty }) ?? candidates.first
            else { continue }
            uniqueColumns.insert(chosen)
        }

        for column in table.columns where !column.type.rawValue.hasSuffix("GENERATED") {
            let key = column.name.lowercased()
            let checks = checksNaming(key)
            columns.append(
                ColumnPlan(
                    name: column.name, storage: Self.storageClass(of: column.type),
                    isNullable: !column.isNotNull && !keyColumns.contains(key),
                    hasDefault: column.defaultValue != nil, isKey: keyColumns.contains(key),
                    isUnique: uniqueColumns.contains(key),
                    isChecked: !checks.isEmpty, checkNumbers: checks.flatMap(\.numbers),
                    checkTexts: checks.flatMap(\.texts)))
        }
    }

    /// The storage class values of a declared type should have, by SQLite's affinity rules (ANY
    /// and untyped columns get text). See <https://www.sqlite.org/datatype3.html#determination_of_column_affinity>.
    static func storageClass(of type: ColumnType) -> StorageClass {
        let name = type.rawValue
        if name.contains("INT") { return .integer }
        if name.contains("CHAR") || name.contains("CLOB") || name.contains("TEXT") { return .text }
        if name.contains("BLOB") { return .blob }
        if name.contains("REAL") || name.contains("FLOA") || name.contains("DOUB") { return .real }
        if name.isEmpty || name == "ANY" { return .text }
        return .integer
    }
}
