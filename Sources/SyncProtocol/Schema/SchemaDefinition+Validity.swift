extension SchemaDefinition {
    /// Why a hello's definition cannot describe a schema (Protocol/README.md, section 5.1), or nil:
    /// a name that is not an identifier, two tables or two columns of one table whose names differ
    /// only in ASCII case, a table without columns, key positions that are not 1 to n, a foreign
    /// key naming a column the table does not have or pairing unequal numbers of columns. A server
    /// answers such a hello `400 invalid_message`.
    ///
    /// ```swift
    /// if let problem = definition.problem(maximumIdentifierLength: limits.maxIdentifierLength) { … }
    /// ```
    public func problem(maximumIdentifierLength: Int) -> String? {
        let isIdentifier = { (name: String) in
            ChangeValidation.isPlainIdentifier(name, maximumLength: maximumIdentifierLength)
        }
        var tableNames: Set<String> = []
        for table in tables {
            guard isIdentifier(table.name) else { return "table name \(quoted(table.name)) is not an identifier" }
            guard tableNames.insert(table.name.lowercased()).inserted else {
                return "two tables are named \(table.name) (names ignore ASCII case)"
            }
            guard !table.columns.isEmpty else { return "table \(table.name) has no columns" }
            var columnNames: Set<String> = []
            for column in table.columns {
                guard isIdentifier(column.name) else {
                    return "column name \(quoted(column.name)) of table \(table.name) is not an identifier"
                }
                guard columnNames.insert(column.name.lowercased()).inserted else {
                    return "table \(table.name) has two columns named \(column.name) (names ignore ASCII case)"
                }
            }
            let positions = table.columns.map(\.primaryKeyPosition).filter { $0 != 0 }.sorted()
            guard !positions.isEmpty, positions == Array(1...positions.count) else {
                return
                    "the primaryKey positions of table \(table.name) are \(positions), not 1 to n for an n-column key"
            }
            for foreignKey in table.foreignKeys {
                let names = foreignKey.columns + [foreignKey.parentTable] + foreignKey.parentColumns
                if let odd = names.first(where: { !isIdentifier($0) }) {
                    return "a foreign key of table \(table.name) names \(quoted(odd)), which is not an identifier"
                }
                guard !foreignKey.columns.isEmpty, foreignKey.columns.count == foreignKey.parentColumns.count else {
                    return "a foreign key of table \(table.name) pairs \(foreignKey.columns.count) columns with "
                        + "\(foreignKey.parentColumns.count) parent columns"
                }
                if let unknown = foreignKey.columns.first(where: { !columnNames.contains($0.lowercased()) }) {
                    return "a foreign key of table \(table.name) names column \(unknown), which the table does not have"
                }
            }
        }
        return nil
    }

    private func quoted(_ name: String) -> String { String(name.prefix(64)).debugDescription }
}
