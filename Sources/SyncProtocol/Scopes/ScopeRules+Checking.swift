extension ScopeRules {
    /// Everything in these rules that does not fit `definition`, the schema a dataset's clients
    /// announced (``SchemaDefinition``), each naming the rule and the table or column: names
    /// the schema lacks (spelled as the schema declares them), a synced table without rules, a
    /// subject or claim compared with a column that does not keep text, a membership whose values
    /// differ in affinity from the column they are compared with, a parent filter without a
    /// foreign key to the parent's whole primary key, and parent filters that go round in a
    /// circle. Empty when the rules can be served.
    ///
    /// ```swift
    /// for problem in rules.problems(against: definition) { print(problem) }
    /// ```
    public func problems(against definition: SchemaDefinition) -> [ScopeRuleProblem] {
        var checker = Checker(definition: definition)
        for name in tables.keys.sorted() {
            checker.check(name, tables[name]!)
        }
        for table in definition.tables where tables[table.name] == nil {
            checker.problems.append(
                ScopeRuleProblem(
                    "tables",
                    "the schema's table \(table.name) has no rules: give it read filters (\"everyone\" shares it "
                        + "with every subject)"))
        }
        for access in Access.allCases {
            if let circle = parentCircle(access, definition: definition) {
                checker.problems.append(
                    ScopeRuleProblem(
                        "tables",
                        "the \(access.rawValue) parent filters go round in a circle (\(circle.joined(separator: " → "))): "
                            + "a row's scope must end at a filter that is not a parent's"))
            }
        }
        return checker.problems
    }

    /// The foreign key of `table` a parent filter to `parent` follows: the one with `columns`, or
    /// when none are named, the table's only foreign key to `parent`.
    static func parentKey(of table: SchemaDefinition.Table, parent: String, columns: [String])
        -> SchemaDefinition.ForeignKey?
    {
        let candidates = table.foreignKeys.filter { $0.parentTable == parent }
        if columns.isEmpty { return candidates.count == 1 ? candidates[0] : nil }
        return candidates.first { $0.columns == columns }
    }

    /// The first circle of parent filters of `access`, as the tables it passes through.
    private func parentCircle(_ access: Access, definition: SchemaDefinition) -> [String]? {
        var parents: [String: [String]] = [:]
        for (name, rules) in tables {
            for case .parent(let parent, _) in rules.filters(access) { parents[name, default: []].append(parent) }
        }
        var finished: Set<String> = []
        func visit(_ table: String, path: [String]) -> [String]? {
            if let start = path.firstIndex(of: table) { return Array(path[start...]) + [table] }
            guard !finished.contains(table) else { return nil }
            for parent in parents[table, default: []].sorted() {
                if let circle = visit(parent, path: path + [table]) { return circle }
            }
            finished.insert(table)
            return nil
        }
        for table in parents.keys.sorted() {
            if let circle = visit(table, path: []) { return circle }
        }
        return nil
    }

    private struct Checker {
        let definition: SchemaDefinition
        var problems: [ScopeRuleProblem] = []

        init(definition: SchemaDefinition) {
            self.definition = definition
        }

        func table(_ name: String) -> SchemaDefinition.Table? { definition.tables.first { $0.name == name } }

        /// What to say of a name the schema does not declare.
        func unknown(_ what: String, _ name: String, among names: [String]) -> String {
            if let spelled = names.first(where: { $0.lowercased() == name.lowercased() }) {
                return "the schema spells the \(what) \(spelled), not \(name)"
            }
            return "the schema has no \(what) \(name)"
        }

        mutating func column(_ name: String, of table: SchemaDefinition.Table, at path: String)
            -> SchemaDefinition.Column?
        {
            if let column = table.columns.first(where: { $0.name == name }) { return column }
            problems.append(
                ScopeRuleProblem(path, unknown("column", name, among: table.columns.map(\.name)) + " in \(table.name)"))
            return nil
        }

        mutating func check(_ name: String, _ rules: TableRules) {
            guard let table = table(name) else {
                problems.append(
                    ScopeRuleProblem("tables.\(name)", unknown("table", name, among: definition.tables.map(\.name))))
                return
            }
            for access in Access.allCases {
                for (index, filter) in rules.filters(access).enumerated() {
                    check(filter, of: table, at: "tables.\(name).\(access.rawValue)[\(index)]")
                }
            }
            for (index, column) in (rules.writableColumns ?? []).enumerated() {
                let path = "tables.\(name).writableColumns[\(index)]"
                if let found = self.column(column, of: table, at: path), found.primaryKeyPosition > 0 {
                    problems.append(
                        ScopeRuleProblem(
                            path,
                            "\(column) is a key column, which an insert always sets and nothing updates: leave it out"))
                }
            }
        }

        mutating func compared(
            _ column: SchemaDefinition.Column, of table: SchemaDefinition.Table, at path: String
        ) {
            guard !ColumnAffinity.keepsText(declaredType: column.type, inStrictTable: table.isStrict) else { return }
            problems.append(
                ScopeRuleProblem(
                    path,
                    "column \(column.name) of \(table.name) is declared \(column.type): a subject or claim is text, so "
                        + "compare it with a TEXT column"))
        }

        mutating func check(_ filter: RowFilter, of table: SchemaDefinition.Table, at path: String) {
            switch filter {
            case .everyone:
                break
            case .equals(let name, _):
                if let column = column(name, of: table, at: "\(path).column") { compared(column, of: table, at: path) }
            case .member(let name, let membership):
                let compared = column(name, of: table, at: "\(path).column")
                guard let members = self.table(membership.table) else {
                    problems.append(
                        ScopeRuleProblem(
                            "\(path).in.table",
                            unknown("table", membership.table, among: definition.tables.map(\.name))))
                    return
                }
                let selected = column(membership.selectColumn, of: members, at: "\(path).in.select")
                if let matched = column(membership.whereColumn, of: members, at: "\(path).in.where") {
                    self.compared(matched, of: members, at: "\(path).in.where")
                }
                if let compared, let selected,
                    ColumnAffinity(declaredType: compared.type) != ColumnAffinity(declaredType: selected.type)
                {
                    problems.append(
                        ScopeRuleProblem(
                            path,
                            "column \(compared.name) of \(table.name) is declared \(compared.type) but "
                                + "\(members.name).\(selected.name) is \(selected.type): values of one affinity "
                                + "never equal the other's"))
                }
            case .parent(let name, let columns):
                guard let parent = self.table(name) else {
                    problems.append(
                        ScopeRuleProblem(
                            "\(path).parent", unknown("table", name, among: definition.tables.map(\.name))))
                    return
                }
                guard parent.name != table.name else {
                    problems.append(ScopeRuleProblem("\(path).parent", "a table cannot be its own parent"))
                    return
                }
                guard let key = ScopeRules.parentKey(of: table, parent: parent.name, columns: columns) else {
                    let keys = table.foreignKeys.filter { $0.parentTable == parent.name }
                    problems.append(
                        ScopeRuleProblem(
                            "\(path).parent",
                            columns.isEmpty && keys.count > 1
                                ? "\(table.name) has \(keys.count) foreign keys to \(parent.name): name the one to "
                                    + "follow with columns"
                                : "\(table.name) has no foreign key \(columns.isEmpty ? "" : "(\(columns.joined(separator: ", "))) ")"
                                    + "to \(parent.name)"))
                    return
                }
                let parentKey = parent.columns.filter { $0.primaryKeyPosition > 0 }
                    .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }.map(\.name)
                if key.parentColumns != parentKey {
                    problems.append(
                        ScopeRuleProblem(
                            "\(path).parent",
                            "the foreign key (\(key.columns.joined(separator: ", "))) references "
                                + "\(parent.name)(\(key.parentColumns.joined(separator: ", "))), not its primary key "
                                + "(\(parentKey.joined(separator: ", "))): a parent is found by its key"))
                }
            }
        }
    }
}
