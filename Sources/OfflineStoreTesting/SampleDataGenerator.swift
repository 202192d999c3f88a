import Foundation
import OfflineStore

/// Fills the tables of one declared schema version with rows that honour its constraints: values
/// of each column's type, NOT NULL, CHECK (guessed from the expression's literals, retried with
/// other values, then NULL or the DEFAULT), UNIQUE and primary keys unique (text UUIDs for text
/// keys), foreign keys pointing at existing parent rows (parents filled first), text rows for
/// FTS5 tables. Nullable columns get NULL in every fourth row. A column a later version turns
/// into a foreign key mostly points at existing parent rows already, as real data would.
struct SampleDataGenerator {
    /// A table that did not get all its rows, and why.
    struct Shortfall {
        var table: String
        var inserted: Int
        var wanted: Int
        var reason: String
    }

    let schema: SchemaSnapshot
    let rowsPerTable: Int
    /// Foreign keys later versions declare on this version's columns, by lowercased table name.
    let laterReferences: [String: [ForeignKeyDefinition]]
    var random: SplitMix64

    static let attemptsPerRow = 6
    private static let words = [
        "apple", "river", "stone", "cloud", "ember", "maple", "north", "quiet", "amber", "delta",
    ]

    init(schema: SchemaSnapshot, laterSchemas: [SchemaSnapshot] = [], rowsPerTable: Int, seed: UInt64) {
        self.schema = schema
        self.rowsPerTable = rowsPerTable
        random = SplitMix64(seed: seed)
        var references: [String: [ForeignKeyDefinition]] = [:]
        for table in schema.tables {
            let columns = Set(table.columns.map { $0.name.lowercased() })
            var seen: Set<[String]> = []
            for later in laterSchemas {
                guard let laterTable = later.table(named: table.name) else { continue }
                for reference in laterTable.foreignKeys + laterTable.columns.compactMap(\.reference) {
                    let key = reference.columns.map { $0.lowercased() }
                    guard key.allSatisfy(columns.contains), seen.insert(key).inserted,
                        let parent = schema.table(named: reference.parentTable),
                        reference.parentColumns.allSatisfy({ name in
                            parent.columns.contains { $0.name.lowercased() == name.lowercased() }
                        })
                    else { continue }
                    references[table.name.lowercased(), default: []].append(reference)
                }
            }
        }
        laterReferences = references
    }

    /// Inserts the rows; returns the tables that fell short (empty when every table got its rows).
    mutating func fill(_ db: Database) throws -> [Shortfall] {
        var shortfalls: [Shortfall] = []
        for table in dependencyOrder(schema.tables) {
            guard try db.tableExists(table.name) else { continue }
            if case .sql = table.kind { continue }
            let result: (inserted: Int, reason: String)
            if case .fts5(let options) = table.kind {
                // An external-content index mirrors another table; its rows come from there.
                if options.contains(where: { $0.name.lowercased() == "content" }) { continue }
                result = try fillFullTextTable(table, db)
            } else {
                result = try fillTable(table, db)
            }
            if result.inserted < rowsPerTable {
                shortfalls.append(
                    Shortfall(table: table.name, inserted: result.inserted, wanted: rowsPerTable, reason: result.reason)
                )
            }
        }
        return shortfalls
    }

    /// Parents before children (later versions' foreign keys count); tables in a cycle in name order.
    func dependencyOrder(_ tables: [TableDefinition]) -> [TableDefinition] {
        let names = Set(tables.map { $0.name.lowercased() })
        func parents(_ table: TableDefinition) -> Set<String> {
            let references =
                table.foreignKeys + table.columns.compactMap(\.reference)
                + (laterReferences[table.name.lowercased()] ?? [])
            return Set(
                references.map { $0.parentTable.lowercased() }
                    .filter { $0 != table.name.lowercased() && names.contains($0) })
        }
        var remaining = tables
        var placed: Set<String> = []
        var ordered: [TableDefinition] = []
        while !remaining.isEmpty {
            let ready = remaining.firstIndex { parents($0).isSubset(of: placed) } ?? 0
            let table = remaining.remove(at: ready)
            placed.insert(table.name.lowercased())
            ordered.append(table)
        }
        return ordered
    }

    // MARK: - FTS5

    private mutating func fillFullTextTable(_ table: TableDefinition, _ db: Database) throws -> (Int, String) {
        let columns = table.columns.map(\.name)
        let sql = Self.insertSQL(table.name, columns: columns)
        var inserted = 0
        var reason = ""
        for row in 0..<rowsPerTable {
            let values = columns.map { _ in DatabaseValue.text(sentence(row)) }
            do {
                try db.execute(SQL(sql: sql, arguments: values))
                inserted += 1
            } catch {
                reason = "\(error)"
                break
            }
        }
        return (inserted, reason)
    }

    // MARK: - Ordinary tables

    private mutating func fillTable(_ table: TableDefinition, _ db: Database) throws -> (Int, String) {
        let plan = TablePlan(table, laterReferences: laterReferences[table.name.lowercased()] ?? [])
        var parents = ParentRows()
        for foreignKey in plan.foreignKeys {
            let rows = foreignKey.isSelfReference ? [] : try Self.parentKeys(foreignKey, db)
            parents.rows.append(rows)
            parents.radix.append(parents.product)
            if !rows.isEmpty {
                parents.product = parents.product.multipliedReportingOverflow(by: rows.count).partialValue
            }
        }
        var inserted = 0
        var reason = ""
        rows: for row in 0..<rowsPerTable {
            // Values by lowercased column name. After a CHECK refusal, only the columns its
            // expression names get new values; the rest of the row is kept.
            var previous: [String: DatabaseValue] = [:]
            var retrying: Set<String>?
            for attempt in 0..<Self.attemptsPerRow {
                var values: [String: DatabaseValue] = [:]
                // One value shared by the row's checked columns of a type passes `a <= b`, `a = b`…
                var shared: [StorageClass: DatabaseValue] = [:]
                for storage in [StorageClass.integer, .real, .text, .blob] { shared[storage] = paletteValue(storage) }
                for column in plan.columns where !plan.foreignKeyColumns.contains(column.key) {
                    if let retrying, !retrying.contains(column.key), let kept = previous[column.key] {
                        values[column.key] = kept
                    } else if let value = value(for: column, row: row, attempt: attempt, shared: shared) {
                        values[column.key] = value
                    }
                }
                for (index, foreignKey) in plan.foreignKeys.enumerated() {
                    let kept = retrying.map { named in foreignKey.keys.allSatisfy { !named.contains($0) } } ?? false
                    if kept, foreignKey.keys.allSatisfy({ previous[$0] != nil }) {
                        for key in foreignKey.keys { values[key] = previous[key] }
                        continue
                    }
                    if let failure = try pointAtParent(
                        foreignKey, index: index, parents: parents, row: row, attempt: attempt, values: &values, db)
                    {
                        reason = failure
                        break rows
                    }
                }
                let columns = plan.columns.filter { values[$0.key] != nil }
                do {
                    try db.execute(
                        SQL(
                            sql: Self.insertSQL(table.name, columns: columns.map(\.name)),
                            arguments: columns.map { values[$0.key] ?? .null }))
                    inserted += 1
                    continue rows
                } catch {
                    reason = "\(error)"
                    if error.primaryResultCode != .constraint { break rows }
                    previous = values
                    retrying = Self.columnsNamed(byRefusal: error.message, in: plan)
                }
            }
        }
        return (inserted, reason)
    }

    /// The parent keys each foreign key of a table can point at, and the mixed-radix weights that
    /// make the first rows' combinations of parents distinct (a composite key of two references).
    private struct ParentRows {
        var rows: [[[DatabaseValue]]] = []
        var radix: [Int] = []
        var product = 1
    }

    /// Sets the columns of one foreign key to an existing parent's key (NULL when there is none
    /// and the columns are nullable). Returns why the row cannot be made, or nil.
    private mutating func pointAtParent(
        _ foreignKey: TablePlan.ForeignKeyPlan, index: Int, parents: ParentRows, row: Int, attempt: Int,
        values: inout [String: DatabaseValue], _ db: Database
    ) throws -> String? {
        // A reference only a later version declares keeps its own value in every fifth row: an orphan.
        if foreignKey.isLaterReference && (row % 5 == 4 || parents.rows[index].isEmpty) { return nil }
        let candidates = foreignKey.isSelfReference ? try Self.parentKeys(foreignKey, db) : parents.rows[index]
        guard !candidates.isEmpty else {
            let own = foreignKey.parentColumns.map { values[$0.lowercased()] }
            if foreignKey.isSelfReference, own.allSatisfy({ $0 != nil }) {
                for (key, value) in zip(foreignKey.keys, own) { values[key] = value }
            } else if foreignKey.isNullable {
                for key in foreignKey.keys { values[key] = .null }
            } else {
                return
                    "\(foreignKey.parentTable) has no row for \(foreignKey.columns.joined(separator: ", ")) to reference"
            }
            return nil
        }
        let choice =
            attempt == 0 && !foreignKey.isSelfReference
            ? (row / max(1, parents.radix[index])) % candidates.count
            : Int.random(in: 0..<candidates.count, using: &random)
        for (key, value) in zip(foreignKey.keys, candidates[choice]) { values[key] = value }
        return nil
    }

    /// The columns a `CHECK constraint failed: <expression>` refusal names; nil (retry every
    /// column) for other refusals, such as UNIQUE, or a named constraint.
    private static func columnsNamed(byRefusal message: String, in plan: TablePlan) -> Set<String>? {
        let prefix = "CHECK constraint failed: "
        guard let range = message.range(of: prefix) else { return nil }
        let named = CheckLiterals(String(message[range.upperBound...])).identifiers
            .intersection(plan.columns.map(\.key))
        return named.isEmpty ? nil : named
    }

    /// The keys of the parent rows a foreign key can point at, in key order.
    private static func parentKeys(_ foreignKey: TablePlan.ForeignKeyPlan, _ db: Database) throws -> [[DatabaseValue]] {
        guard try db.tableExists(foreignKey.parentTable) else { return [] }
        let columns = foreignKey.parentColumns.map(quoteIdentifier).joined(separator: ", ")
        let sql =
            "SELECT \(columns) FROM \(quoteIdentifier(foreignKey.parentTable)) WHERE "
            + foreignKey.parentColumns.map { "\(quoteIdentifier($0)) IS NOT NULL" }.joined(separator: " AND ")
            + " ORDER BY \(columns)"
        return try db.fetchAll(SQL(sql: sql)).map { try $0.values() }
    }

    private static func insertSQL(_ table: String, columns: [String]) -> String {
        guard !columns.isEmpty else { return "INSERT INTO \(quoteIdentifier(table)) DEFAULT VALUES" }
        return "INSERT INTO \(quoteIdentifier(table)) (\(columns.map(quoteIdentifier).joined(separator: ", "))) "
            + "VALUES (\(Array(repeating: "?", count: columns.count).joined(separator: ", ")))"
    }

    // MARK: - Values

    /// The value of one column in one row, or nil to leave it to its DEFAULT.
    private mutating func value(
        for column: TablePlan.ColumnPlan, row: Int, attempt: Int, shared: [StorageClass: DatabaseValue]
    ) -> DatabaseValue? {
        // A checked unique column tries a distinct value first, then values its CHECK may accept.
        if column.isUnique && (attempt == 0 || !column.isChecked) {
            switch column.storage {
            case .integer: return .integer(Int64(row + 1 + attempt * 1_000_000))
            case .real: return .real(Double(row) + 0.5 + Double(attempt) * 1_000_000)
            case .blob: return .blob(randomBytes(16))
            default:
                if column.isKey { return .text(random.uuidString()) }
                return .text("\(column.name) \(row + 1)" + (attempt > 0 ? " \(random.uuidString().prefix(8))" : ""))
            }
        }
        let usesNull = column.isNullable && row % 4 == 3
        guard column.isChecked else { return usesNull ? .null : plainValue(column, row: row) }
        if attempt == Self.attemptsPerRow - 1 {
            if column.isNullable { return .null }
            if column.hasDefault { return nil }
            return literalValue(column, row: row, nudge: false) ?? paletteValue(column.storage)
        }
        if attempt == 0 && usesNull { return .null }
        // A unique column spent attempt 0 on a distinct value.
        switch column.isUnique ? attempt - 1 : attempt {
        case 0, 3: return literalValue(column, row: row, nudge: false) ?? plainValue(column, row: row)
        case 1: return literalValue(column, row: row, nudge: true) ?? paletteValue(column.storage)
        case 2: return shared[column.storage] ?? paletteValue(column.storage)
        default: return paletteValue(column.storage)
        }
    }

    private mutating func plainValue(_ column: TablePlan.ColumnPlan, row: Int) -> DatabaseValue {
        let name = column.name.lowercased()
        let looksLikeTime = name.contains("date") || name.contains("time") || name.hasSuffix("at")
        switch column.storage {
        case .integer:
            return looksLikeTime
                ? .integer(Int64.random(in: 1_700_000_000...1_800_000_000, using: &random))
                : .integer(Int64.random(in: 0...9, using: &random))
        case .real:
            return looksLikeTime
                ? .real(Double(Int64.random(in: 1_700_000_000...1_800_000_000, using: &random)))
                : .real(Double(Int.random(in: 0...10_000, using: &random)) / 100)
        case .blob:
            return .blob(randomBytes(8))
        default:
            if name.contains("date") {
                let month = Int.random(in: 1...12, using: &random)
                let day = Int.random(in: 1...28, using: &random)
                return .text(String(format: "2026-%02d-%02d", month, day))
            }
            return .text("\(column.name) \(row + 1) " + sentence(row))
        }
    }

    /// A value built from the literals of the column's CHECK expressions (nudged by one on a retry).
    private mutating func literalValue(_ column: TablePlan.ColumnPlan, row: Int, nudge: Bool) -> DatabaseValue? {
        switch column.storage {
        case .integer, .real:
            guard let low = column.checkNumbers.min(), let high = column.checkNumbers.max() else { return nil }
            if nudge {
                let base = column.checkNumbers.randomElement(using: &random) ?? low
                let moved = base + Double(Int.random(in: -1...1, using: &random))
                return column.storage == .integer ? .integer(Int64(moved.rounded())) : .real(moved)
            }
            if column.storage == .integer {
                let lower = Int64(low.rounded(.up))
                let upper = max(lower, Int64(high.rounded(.down)))
                return .integer(Int64.random(in: lower...upper, using: &random))
            }
            return .real(low == high ? low : Double.random(in: low...high, using: &random))
        case .text:
            if let text = column.checkTexts.randomElement(using: &random) {
                return .text(nudge ? text.uppercased() : text)
            }
            // Numbers in a text column's CHECK are usually lengths: `length(code) = 2`.
            guard let low = column.checkNumbers.min(), let high = column.checkNumbers.max() else { return nil }
            var length = Int.random(in: Int(max(0, low))...Int(min(64, max(low, high))), using: &random)
            if nudge { length = max(0, length + Int.random(in: -1...1, using: &random)) }
            let letters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
            return .text(String((0..<length).map { _ in letters.randomElement(using: &random)! }))
        default:
            return nil
        }
    }

    private mutating func paletteValue(_ storage: StorageClass) -> DatabaseValue {
        switch storage {
        case .integer: .integer([0, 1, 2, 5, 10, 100, -1, 1_000_000].randomElement(using: &random)!)
        case .real: .real([0, 0.5, 1, 2.5, 100, -1, 1_700_000_000].randomElement(using: &random)!)
        case .blob: .blob(randomBytes(Int.random(in: 0...4, using: &random)))
        default: .text(["a", "x", "1", "", "2026-01-15", "text", "A1"].randomElement(using: &random)!)
        }
    }

    private mutating func sentence(_ row: Int) -> String {
        (0..<3).map { _ in Self.words.randomElement(using: &random)! }.joined(separator: " ") + " \(row + 1)"
    }

    private mutating func randomBytes(_ count: Int) -> Data {
        Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &random) })
    }
}
