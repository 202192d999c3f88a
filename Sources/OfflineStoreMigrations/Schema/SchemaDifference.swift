/// One way a live database differs from a declared schema, with whether the migrator may fix
/// it additively and, when it may not, what the app developer should do instead.
public struct SchemaDifference: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case missingTable, unexpectedTable, tableKindChanged, tableOptionsChanged
        case missingColumn, unexpectedColumn, columnTypeChanged, notNullChanged, defaultChanged, collationChanged
        case autoincrementChanged, primaryKeyChanged, uniqueConstraintsChanged, checksChanged, foreignKeysChanged
        case missingIndex, unexpectedIndex, indexChanged
    }

    public var kind: Kind
    public var table: String
    public var column: String?
    public var index: String?
    /// What the declaration says, and what the database has, in canonical form.
    public var declared: String?
    public var live: String?
    /// Whether a lightweight stage can bring the database there by creating or adding.
    public var isAdditive: Bool
    /// What to do about a non-additive difference (the migration decision tree).
    public var fix: String

    public var description: String {
        var subject = table
        if let column { subject += ".\(column)" }
        if let index { subject += " index \(index)" }
        var text = "\(subject): \(kind.rawValue)"
        if declared != nil || live != nil {
            text += " (declared: \(declared ?? "nothing"); database: \(live ?? "nothing"))"
        }
        if !isAdditive { text += ". Fix: \(fix)" }
        return text
    }
}

extension SchemaSnapshot {
    /// What separates this (live) schema from `target` (a declared one), table by table,
    /// column by column, index by index. Empty when they match.
    public func differences(toReach target: SchemaSnapshot) -> [SchemaDifference] {
        var differences: [SchemaDifference] = []
        let liveByKey = Dictionary(normalizedTables.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        for (declaredTable, declared) in zip(target.tables, target.normalizedTables) {
            guard let live = liveByKey[declared.key] else {
                differences.append(
                    SchemaDifference(
                        kind: .missingTable, table: declared.name, isAdditive: true, fix: "the migrator creates it"))
                continue
            }
            differences += Self.differences(live: live, declared: declared, declaredTable: declaredTable)
        }
        let declaredKeys = Set(target.normalizedTables.map(\.key))
        for live in normalizedTables where !declaredKeys.contains(live.key) {
            differences.append(
                SchemaDifference(
                    kind: .unexpectedTable, table: live.name, isAdditive: false,
                    fix: "OfflineStore never drops a table and its data: keep declaring \(live.name) in every later "
                        + "version (mark it deprecated in the model and stop writing it)"))
        }
        return differences
    }

    private static let rebuildFix =
        "rebuild the table in a .custom stage's willMigrate with context.rebuildTable(…), which follows SQLite's "
        + "documented 12-step procedure; never rename the old table first"

    private static func differences(live: NormalizedTable, declared: NormalizedTable, declaredTable: TableDefinition)
        -> [SchemaDifference]
    {
        var differences: [SchemaDifference] = []
        let table = declared.name
        func add(
            _ kind: SchemaDifference.Kind, column: String? = nil, index: String? = nil, declared: String?,
            live: String?,
            additive: Bool = false, fix: String = rebuildFix
        ) {
            differences.append(
                SchemaDifference(
                    kind: kind, table: table, column: column, index: index, declared: declared, live: live,
                    isAdditive: additive, fix: fix))
        }
        if live.kind != declared.kind {
            add(.tableKindChanged, declared: declared.kind, live: live.kind)
            return differences
        }
        if live.isStrict != declared.isStrict || live.isWithoutRowID != declared.isWithoutRowID {
            let describe: (NormalizedTable) -> String = {
                [$0.isStrict ? "STRICT" : nil, $0.isWithoutRowID ? "WITHOUT ROWID" : nil].compactMap { $0 }
                    .joined(separator: ", ")
            }
            add(.tableOptionsChanged, declared: describe(declared), live: describe(live))
        }

        var missingColumns: Set<String> = []
        for column in declared.columns {
            guard let liveColumn = live.column(column.name) else {
                missingColumns.insert(column.name.uppercased())
                let declaration = declaredTable.columns.first { $0.name.lowercased() == column.name.lowercased() }
                let refusal = declaration.flatMap { addColumnRefusal($0, in: declaredTable) }
                add(
                    .missingColumn, column: column.name, declared: column.type, live: nil, additive: refusal == nil,
                    fix: refusal ?? "the migrator adds it")
                continue
            }
            if liveColumn.type != column.type {
                add(
                    .columnTypeChanged, column: column.name, declared: column.type, live: liveColumn.type,
                    fix: "never change a column's type in place: add a new column with the new type, copy the data "
                        + "in a .custom stage's didMigrate, and keep declaring the old column as deprecated")
            }
            if liveColumn.isNotNull != column.isNotNull {
                add(
                    .notNullChanged, column: column.name, declared: column.isNotNull ? "NOT NULL" : "nullable",
                    live: liveColumn.isNotNull ? "NOT NULL" : "nullable",
                    fix: column.isNotNull
                        ? "keep the column nullable and validate in code, or add a new NOT NULL column with a "
                            + "DEFAULT and copy into it; or \(rebuildFix)"
                        : rebuildFix)
            }
            if liveColumn.defaultSQL != column.defaultSQL {
                add(.defaultChanged, column: column.name, declared: column.defaultSQL, live: liveColumn.defaultSQL)
            }
            if liveColumn.collation != column.collation {
                add(.collationChanged, column: column.name, declared: column.collation, live: liveColumn.collation)
            }
            if liveColumn.isAutoincrement != column.isAutoincrement {
                add(
                    .autoincrementChanged, column: column.name, declared: String(column.isAutoincrement),
                    live: String(liveColumn.isAutoincrement))
            }
        }
        let declaredColumnKeys = Set(declared.columns.map { $0.name.uppercased() })
        for liveColumn in live.columns where !declaredColumnKeys.contains(liveColumn.name.uppercased()) {
            add(
                .unexpectedColumn, column: liveColumn.name, declared: nil, live: liveColumn.type,
                fix: "OfflineStore never drops a column: keep declaring \(liveColumn.name) (deprecated) and stop "
                    + "writing it; to change a column, add a new one, copy, and deprecate the old")
        }
        if live.primaryKey != declared.primaryKey {
            add(
                .primaryKeyChanged, declared: declared.primaryKey.joined(separator: ", "),
                live: live.primaryKey.joined(separator: ", "))
        }
        if live.uniqueConstraints != declared.uniqueConstraints {
            add(
                .uniqueConstraintsChanged,
                declared: declared.uniqueConstraints.map { "(\($0.joined(separator: ", ")))" }.joined(separator: " "),
                live: live.uniqueConstraints.map { "(\($0.joined(separator: ", ")))" }.joined(separator: " "),
                fix: "declare a unique Index instead of a UNIQUE constraint (indexes can be added), or \(rebuildFix)")
        }
        // A new column's own CHECK and REFERENCES arrive with ADD COLUMN; they are not changes.
        let newColumnChecks = declaredTable.columns.filter { missingColumns.contains($0.name.uppercased()) }
            .flatMap(\.checks).map(SQLScanner.normalizedExpression)
        var expectedChecks = declared.checks
        for check in newColumnChecks {
            if let found = expectedChecks.firstIndex(of: check) { expectedChecks.remove(at: found) }
        }
        if live.checks != expectedChecks {
            add(
                .checksChanged, declared: expectedChecks.joined(separator: "; "),
                live: live.checks.joined(separator: "; "))
        }
        let newColumnReferences = declaredTable.columns.filter { missingColumns.contains($0.name.uppercased()) }
            .compactMap(\.reference).map { $0.columns[0].uppercased() }
        let expectedForeignKeys = declared.foreignKeys.filter { foreignKey in
            !newColumnReferences.contains { foreignKey.hasPrefix("(\($0)) ") }
        }
        if live.foreignKeys != expectedForeignKeys {
            let changedColumns = Set(expectedForeignKeys).symmetricDifference(live.foreignKeys).compactMap { key in
                key.split(separator: ")").first.map { $0.dropFirst() }.map(String.init)
            }
            add(
                .foreignKeysChanged, column: changedColumns.sorted().first,
                declared: expectedForeignKeys.joined(separator: "; "), live: live.foreignKeys.joined(separator: "; "),
                fix: "a foreign key on an existing column needs SQLite's table rebuild: \(rebuildFix)")
        }
        let liveIndexes = Dictionary(
            live.indexes.map { ($0.name.lowercased(), $0) }, uniquingKeysWith: { first, _ in first })
        let describe: (NormalizedTable.NormalizedIndex) -> String = {
            ($0.isUnique ? "UNIQUE " : "") + "(\($0.columns.joined(separator: ", ")))"
                + ($0.condition.map { " WHERE \($0)" } ?? "")
        }
        for index in declared.indexes {
            guard let liveIndex = liveIndexes[index.name.lowercased()] else {
                add(
                    .missingIndex, index: index.name, declared: describe(index), live: nil, additive: true,
                    fix: "the migrator creates it")
                continue
            }
            if liveIndex != index {
                add(
                    .indexChanged, index: index.name, declared: describe(index), live: describe(liveIndex),
                    fix: "declare the changed index under a new name and drop the old one in a .custom stage "
                        + "(DROP INDEX IF EXISTS)")
            }
        }
        let declaredIndexNames = Set(declared.indexes.map { $0.name.lowercased() })
        for liveIndex in live.indexes where !declaredIndexNames.contains(liveIndex.name.lowercased()) {
            add(
                .unexpectedIndex, index: liveIndex.name, declared: nil, live: describe(liveIndex),
                fix: "keep declaring the index, or drop it in a .custom stage with DROP INDEX IF EXISTS")
        }
        return differences
    }

    /// Why `ALTER TABLE ADD COLUMN` cannot add this column, or nil when it can.
    /// See <https://www.sqlite.org/lang_altertable.html#altertabaddcol>.
    static func addColumnRefusal(_ column: Column, in table: TableDefinition) -> String? {
        if column.isPrimaryKey {
            return "ADD COLUMN cannot add a PRIMARY KEY column; \(rebuildFix)"
        }
        if column.isUnique {
            return "ADD COLUMN cannot add a UNIQUE column; add it without UNIQUE and declare a unique Index on it"
        }
        if case .expression = column.defaultValue {
            return "ADD COLUMN cannot use an expression DEFAULT; use a literal DEFAULT, or add the column nullable and "
                + "backfill it in a .custom stage's didMigrate"
        }
        let hasNonNullDefault = column.defaultValue.map { $0 != .literal(.null) } ?? false
        if column.isNotNull, !hasNonNullDefault {
            return "a NOT NULL column needs a non-NULL DEFAULT to be added to existing rows; give it a DEFAULT or "
                + "declare it nullable first and backfill it"
        }
        if column.reference != nil, column.isNotNull || hasNonNullDefault {
            return "a new column with REFERENCES must be nullable with no DEFAULT (existing rows would point at "
                + "nothing); add it nullable and backfill it in a .custom stage's didMigrate"
        }
        return nil
    }
}
