/// The rules of one schema version's ``SchemaDefinition`` that a change must keep for every client
/// of the version to apply it (Protocol/README.md, section 5.2, "Changes and the schema"): its
/// table and columns are the version's (names compared without regard to ASCII case), its key
/// names exactly the table's key columns, no column that is NOT NULL is set to null, an insert
/// names every NOT NULL column without a default, and a STRICT table's columns take only their
/// classes (``StrictColumnRule``). Built once per version, then asked once per pushed change.
/// ``governing(_:among:)`` picks the rules a change pushed under a version without a definition is
/// checked by.
///
/// ```swift
/// let rules = SchemaRules(definition, version: SchemaVersion(1, 1))
/// if let problem = rules.problem(in: change) {
///     throw ErrorBody(problem.code, "change \(index): \(problem.message)", changeIndex: index)
/// }
/// ```
public final class SchemaRules: Sendable {
    /// The version whose definition the rules are.
    public let version: SchemaVersion
    /// Whether a table or column the definition does not declare passes (rules for a newer minor
    /// version, ``forNewerMinorVersion()``).
    public let passesUndeclaredNames: Bool
    /// Tables by declared name and by ASCII-lowercased name.
    private let tables: [String: TableRules]

    public init(_ definition: SchemaDefinition, version: SchemaVersion) {
        self.version = version
        passesUndeclaredNames = false
        var byName: [String: TableRules] = [:]
        for table in definition.tables {
            let rules = TableRules(table)
            byName[table.name.lowercased()] = rules
            byName[table.name] = rules
        }
        tables = byName
    }

    private init(_ rules: SchemaRules, passesUndeclaredNames: Bool) {
        version = rules.version
        self.passesUndeclaredNames = passesUndeclaredNames
        tables = rules.tables
    }

    /// These rules as they hold for a change of a newer minor version of the same major, which may
    /// name tables and columns this definition lacks (a newer minor only adds those, section 7.3):
    /// a client of this version stashes what it does not know (section 8.3) and applies the rest,
    /// so only the rest is checked.
    ///
    /// ```swift
    /// let rules = SchemaRules(definitionOf1_1, version: SchemaVersion(1, 1)).forNewerMinorVersion()
    /// rules.problem(in: changeOfANewTable)  // nil
    /// ```
    public func forNewerMinorVersion() -> SchemaRules {
        SchemaRules(self, passesUndeclaredNames: true)
    }

    /// The rules a change pushed under `version` is checked by, among the rules of the definitions
    /// a dataset has recorded (Protocol/README.md, section 5.2): `version`'s own; else those of the
    /// lowest version of its major above it (a newer minor keeps every table and column and only
    /// adds nullable or defaulted ones, section 7.3, so what a correct client of `version` writes
    /// passes them); else those of the highest version of its major below it, for the tables and
    /// columns it declares (``forNewerMinorVersion()``); else nil: nothing of the major is known.
    ///
    /// ```swift
    /// let rules = SchemaRules.governing(push.schemaVersion, among: recorded)
    /// ```
    public static func governing(_ version: SchemaVersion, among recorded: [SchemaVersion: SchemaRules])
        -> SchemaRules?
    {
        if let own = recorded[version] { return own }
        var above: SchemaRules?
        var below: SchemaRules?
        for (candidate, rules) in recorded where candidate.major == version.major {
            if candidate > version {
                if above.map({ candidate < $0.version }) ?? true { above = rules }
            } else if below.map({ candidate > $0.version }) ?? true {
                below = rules
            }
        }
        return above ?? below?.forNewerMinorVersion()
    }

    /// The first rule `change` breaks, or nil. A change that passed ``ChangeValidation`` (no name
    /// twice, no null in the key, a key value repeated among an insert's columns equal to it).
    public func problem(in change: Change) -> ChangeValidation.Problem? {
        var last: Lookup?
        var spelledAsDeclared = true
        return problem(in: change, last: &last, spelledAsDeclared: &spelledAsDeclared)
    }

    /// The table a batch's changes named last: most name the same one, which is then not looked up
    /// again.
    public struct Lookup {
        fileprivate let name: String
        fileprivate let table: TableRules
    }

    /// ``problem(in:)`` for the changes of one batch in turn, `last` kept between them.
    /// `spelledAsDeclared` is set to false when the change passes but names its table or a column
    /// in another case than the definition: a server stores it as ``respelled(_:)`` writes it.
    ///
    /// ```swift
    /// var last: SchemaRules.Lookup?
    /// var spelledAsDeclared = true
    /// for change in push.changes {
    ///     if let problem = rules.problem(in: change, last: &last, spelledAsDeclared: &spelledAsDeclared) { … }
    /// }
    /// ```
    public func problem(
        in change: Change, last: inout Lookup?, spelledAsDeclared: inout Bool
    ) -> ChangeValidation.Problem? {
        let table: TableRules
        if let last, last.name == change.table {
            table = last.table
        } else {
            guard let found = tables[change.table] ?? tables[change.table.lowercased()] else {
                if passesUndeclaredNames { return nil }
                return violation("table \(change.table) is not a table of schema \(version)")
            }
            table = found
            last = Lookup(name: change.table, table: found)
        }
        var asDeclared = table.name == change.table
        // The key names the key columns, each once (ChangeValidation refused a name twice).
        var keyColumnsNamed = 0
        for (name, value) in change.key {
            guard let column = table.column(name), column.keyPosition > 0 else { break }
            keyColumnsNamed += 1
            asDeclared = asDeclared && column.name == name
            if let problem = table.typeProblem(value, column) { return violation(problem) }
        }
        guard keyColumnsNamed == change.key.count, keyColumnsNamed == table.keyColumns.count else {
            return violation(
                "the key names \(change.key.keys.sorted()) but table \(table.name) is keyed by \(table.keyColumns)")
        }
        var requiredNamed = 0
        for (name, value) in change.columns {
            guard let column = table.column(name) else {
                if passesUndeclaredNames { continue }
                return violation("column \(name) is not a column of table \(table.name) in schema \(version)")
            }
            if column.isNotNull, case .null = value {
                return violation("column \(table.name).\(column.name) is NOT NULL; the change sets it to null")
            }
            if let problem = table.typeProblem(value, column) { return violation(problem) }
            if column.isRequiredOnInsert { requiredNamed += 1 }
            asDeclared = asDeclared && column.name == name
        }
        if change.op == .insert, requiredNamed < table.requiredOnInsert.count {
            let named = Set(change.columns.keys.map { $0.lowercased() })
            let missing = table.requiredOnInsert.filter { !named.contains($0.lowercased()) }
            return violation(
                "the insert leaves out column \(table.name).\(missing.first ?? "?"), which is NOT NULL without a "
                    + "default")
        }
        if !asDeclared { spelledAsDeclared = false }
        return nil
    }

    /// `change` with its table and column names spelt as the definition declares them, so that
    /// one row is stored under one spelling whatever case a client sent (Protocol/README.md,
    /// section 5.2). For a change ``problem(in:)`` passed; names it does not find stay as they are.
    ///
    /// ```swift
    /// let stored = rules.respelled(change)  // "casetable"/"id" → "CaseTable"/"ID"
    /// ```
    public func respelled(_ change: Change) -> Change {
        guard let table = tables[change.table] ?? tables[change.table.lowercased()] else { return change }
        func declared(_ values: [String: WireValue]) -> [String: WireValue] {
            Dictionary(values.map { (table.column($0.key)?.name ?? $0.key, $0.value) }) { first, _ in first }
        }
        var respelled = change
        respelled.table = table.name
        respelled.key = declared(change.key)
        respelled.columns = declared(change.columns)
        return respelled
    }

    private func violation(_ message: String) -> ChangeValidation.Problem {
        ChangeValidation.Problem(code: .schemaViolation, message: message)
    }
}

/// What ``SchemaRules`` checks of one table, looked up by name once per change.
final class TableRules: Sendable {
    struct ColumnRule: Sendable {
        let name: String
        let type: String
        let keyPosition: Int
        let isNotNull: Bool
        let isRequiredOnInsert: Bool
        let accepted: StorageClasses
    }

    let name: String
    let isStrict: Bool
    let keyColumns: [String]
    /// The columns an insert must name: NOT NULL, no default, not in the key (the key's values
    /// come with the key).
    let requiredOnInsert: [String]
    private let columns: [ColumnRule]
    /// Places in ``columns`` by ASCII-lowercased name, for a name not spelt as declared: one
    /// spelt so is found by comparing it with each (cheaper than hashing it, for a table's few
    /// columns).
    private let places: [String: Int]

    init(_ table: SchemaDefinition.Table) {
        name = table.name
        isStrict = table.isStrict
        keyColumns = table.columns.filter { $0.primaryKeyPosition > 0 }.sorted {
            $0.primaryKeyPosition < $1.primaryKeyPosition
        }.map(\.name)
        columns = table.columns.map { column in
            ColumnRule(
                name: column.name, type: column.type, keyPosition: column.primaryKeyPosition,
                isNotNull: column.isNotNull || column.primaryKeyPosition > 0,
                isRequiredOnInsert: column.isNotNull && column.defaultValue == nil && column.primaryKeyPosition == 0,
                accepted: table.isStrict ? StrictColumnRule.accepted(byDeclaredType: column.type) : .all)
        }
        requiredOnInsert = columns.filter(\.isRequiredOnInsert).map(\.name)
        var places: [String: Int] = [:]
        for (place, column) in table.columns.enumerated() { places[column.name.lowercased()] = place }
        self.places = places
    }

    func column(_ name: String) -> ColumnRule? {
        for column in columns where column.name == name { return column }
        return places[name.lowercased()].map { columns[$0] }
    }

    /// Why a STRICT table's column does not take `value`, or nil.
    func typeProblem(_ value: WireValue, _ column: ColumnRule) -> String? {
        guard !column.accepted.contains(value.storageClassBit) else { return nil }
        return "column \(name).\(column.name) is \(column.type) in a STRICT table; the change carries "
            + value.storageClassName
    }
}
