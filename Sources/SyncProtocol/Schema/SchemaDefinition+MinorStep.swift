extension SchemaDefinition {
    /// Why this definition cannot be a later minor or patch version of `older`, or nil when it can
    /// (Protocol/README.md, section 7.3): every table of `older` is here with the same STRICT and
    /// WITHOUT ROWID flags, every column of it with the same type, NOT NULL and place in the key,
    /// and every column added to one of its tables is nullable or has a default and is not in the
    /// key. Names compare without regard to ASCII case. Tables only this definition has, foreign
    /// keys and defaults are not compared. A server records no definition that fails this against
    /// one of the same major (`409 schema_conflict`): the rules it checks pushes by
    /// (``SchemaRules/governing(_:among:)``) hold across a major only because each step keeps it.
    ///
    /// ```swift
    /// newer.minorStepProblem(from: older)  // "column reminders.notes is nullable in one and NOT NULL in the other"
    /// ```
    public func minorStepProblem(from older: SchemaDefinition) -> String? {
        var tables: [String: Table] = [:]
        for table in self.tables { tables[table.name.lowercased()] = table }
        for old in older.tables {
            guard let new = tables[old.name.lowercased()] else { return "table \(old.name) is left out" }
            if new.isStrict != old.isStrict { return "table \(old.name) is STRICT in one and not in the other" }
            if new.isWithoutRowID != old.isWithoutRowID {
                return "table \(old.name) is WITHOUT ROWID in one and not in the other"
            }
            var columns: [String: Column] = [:]
            for column in new.columns { columns[column.name.lowercased()] = column }
            for column in old.columns {
                let name = "\(old.name).\(column.name)"
                guard let kept = columns.removeValue(forKey: column.name.lowercased()) else {
                    return "column \(name) is left out"
                }
                if kept.type.uppercased() != column.type.uppercased() {
                    return "column \(name) is \(column.type) in one and \(kept.type) in the other"
                }
                if kept.isNotNull != column.isNotNull {
                    return "column \(name) is nullable in one and NOT NULL in the other"
                }
                if kept.primaryKeyPosition != column.primaryKeyPosition {
                    return "column \(name) has another place in the primary key"
                }
            }
            for added in columns.values.sorted(by: { $0.name < $1.name }) {
                if added.primaryKeyPosition > 0 { return "column \(new.name).\(added.name) is added to the key" }
                if added.isNotNull, added.defaultValue == nil {
                    return "column \(new.name).\(added.name) is added NOT NULL without a default"
                }
            }
        }
        return nil
    }
}
