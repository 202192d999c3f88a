// Each statement shape's rules, and what it changes in the linter's picture of the script.
extension SQLLinter {
    mutating func apply(_ shape: StatementShape, to check: inout StatementCheck, directives: LintDirectives) {
        let environment = check.environment
        switch shape {
        case .begin:
            transaction?.begin()
        case .commit, .rollback:
            transaction?.end()
        case .savepoint(let name):
            transaction?.savepoint(name)
        case .release(let name):
            transaction?.release(name)

        case .createTable(let table, let ifNotExists, let isTemporary, let fromSelect):
            if !ifNotExists {
                check.report(
                    .createWithoutIfNotExists,
                    "CREATE \(isTemporary ? "TEMP " : "")TABLE \(table) has no IF NOT EXISTS; it fails where the table exists"
                )
            }
            if !isTemporary && !table.isTemporary {
                reportRecreation(of: table, by: "re-created", check: &check)
            }
            // With IF NOT EXISTS an existing table stays as it is, rows and all.
            if !ifNotExists || isAbsent(facts(table)) {
                tables[table.key] = TableFacts(
                    origin: .created(isEmpty: !fromSelect), isTemporary: isTemporary || table.isTemporary)
            } else if isTemporary {
                var temporary = facts(table)
                temporary.isTemporary = true
                tables[table.key] = temporary
            }

        case .createObject(let kind, let name, let ifNotExists):
            if !ifNotExists {
                check.report(
                    .createWithoutIfNotExists,
                    "CREATE \(kind) \(name) has no IF NOT EXISTS; it fails where the \(kind.lowercased()) exists")
            }

        case .createTrigger(let name, let ifNotExists, let body):
            if !ifNotExists {
                check.report(
                    .createWithoutIfNotExists, "CREATE TRIGGER \(name) has no IF NOT EXISTS; it fails where it exists")
            }
            // The body runs whenever the trigger fires, later, when the table has rows: only sync status matters.
            for statement in body {
                switch StatementShape(statement) {
                case .write(let verb, let table, hasWhere: false):
                    checkUnboundedWrite(
                        verb, on: table, check: &check, ignoringRowCount: true, line: statement.first?.line,
                        text: check.statement.text(of: statement))
                default:
                    break
                }
            }

        case .dropTable(let table):
            let known = facts(table)
            if !known.isTemporary && !known.isCopied {
                switch known.rowCount(in: environment) {
                case 0:
                    break
                case let count?:
                    check.report(
                        .dropTableWithRows, "DROP TABLE \(table) deletes its \(count) row\(count == 1 ? "" : "s")")
                case nil:
                    check.report(
                        .dropTableWithRows, "DROP TABLE \(table) deletes a table that may have rows (count unknown)")
                }
            }
            tables[table.key] = TableFacts(origin: .absent)

        case .renameTable(let table, let newName):
            let renamed = QualifiedName(schema: table.schema, name: newName)
            if renamedAway[renamed.key]?.to.lowercased() == table.key {
                renamedAway[renamed.key] = nil  // renamed back: every reference is where it was
            } else {
                // Another table taking the old name is the same hazard as creating it anew.
                reportRecreation(of: renamed, by: "replaced by \(table)", check: &check)
            }
            tables[renamed.key] = facts(table)
            tables[table.key] = TableFacts(origin: .absent)
            renamedAway[table.key] = TableRename(
                from: table, to: newName, line: check.statement.line, statement: check.statement.text,
                allowed: directives.allowed)

        case .addColumn(let table, let column, let definition):
            if definition.isNotNull && !definition.hasNonNullDefault && !definition.isGenerated {
                check.report(
                    .addColumnNotNullWithoutDefault,
                    "ALTER TABLE \(table) adds column \"\(column)\" NOT NULL without a non-NULL DEFAULT")
            }

        case .dropColumn(let table, let column):
            check.report(.dropColumn, "ALTER TABLE \(table) drops column \"\(column)\" and its data")

        case .changeColumnInPlace(let table, let column, let verb):
            check.report(
                .columnTypeChangeInPlace,
                "ALTER TABLE \(table) \(verb) \"\(column)\" tries to change column \"\(column)\" in place")

        case .pragma(let name, let value?):
            checkPragma(name.key, value: value, check: &check)

        case .pragma(_, nil):
            break

        case .write(let verb, let table, let hasWhere):
            if table.isSchemaTable {
                check.report(.columnTypeChangeInPlace, "\(verb.rawValue) of \(table) edits the schema in place")
            } else if !hasWhere {
                checkUnboundedWrite(verb, on: table, check: &check, ignoringRowCount: false)
            }

        case .insert(let table, let source):
            if table.isSchemaTable {
                check.report(.columnTypeChangeInPlace, "INSERT into \(table) edits the schema in place")
            }
            if case .created(isEmpty: true) = facts(table).origin {
                tables[table.key]?.origin = .created(isEmpty: false)
            }
            if let source {
                var copied = facts(source)
                copied.isCopied = true
                tables[source.key] = copied
            }

        case .other:
            break
        }
    }

    /// Reports `rename-old-table-first` when `table` takes the name of a table renamed away earlier.
    private mutating func reportRecreation(of table: QualifiedName, by how: String, check: inout StatementCheck) {
        guard let rename = renamedAway.removeValue(forKey: table.key),
            !rename.allowed.contains(LintRule.renameOldTableFirst.id)
        else { return }
        check.report(
            .renameOldTableFirst,
            "table \(rename.from) is renamed to \"\(rename.to)\" and then \(how) at line \(check.statement.line): "
                + "SQLite points the foreign keys, triggers and views that refer to \(rename.from) "
                + "at \"\(rename.to)\" instead",
            line: rename.line, statement: rename.statement)
    }

    private func isAbsent(_ facts: TableFacts) -> Bool {
        if case .absent = facts.origin { return true }
        return false
    }

    // Values that turn a boolean pragma off; anything else (ON, 1, TRUE, YES) turns it on.
    private static let pragmaOffValues: Set<String> = ["OFF", "0", "FALSE", "NO", "RESET"]

    private func checkPragma(_ name: String, value: String, check: inout StatementCheck) {
        switch name {
        case "foreign_keys" where transaction?.isInsideTransaction == true:
            check.report(
                .foreignKeysPragmaInTransaction,
                "PRAGMA foreign_keys = \(value) inside a transaction is silently ignored by SQLite")
        case "writable_schema" where !Self.pragmaOffValues.contains(value):
            check.report(
                .columnTypeChangeInPlace, "PRAGMA writable_schema = \(value) opens sqlite_schema to direct edits")
        default:
            break
        }
    }

    /// A DELETE or UPDATE without WHERE: a hazard unless the table is known empty or known not synced.
    private func checkUnboundedWrite(
        _ verb: StatementShape.WriteVerb, on table: QualifiedName, check: inout StatementCheck, ignoringRowCount: Bool,
        line: Int? = nil, text: String? = nil
    ) {
        let known = facts(table)
        if !ignoringRowCount && known.rowCount(in: check.environment) == 0 { return }
        let action =
            verb == .delete ? "DELETE FROM \(table) without WHERE deletes" : "UPDATE \(table) without WHERE rewrites"
        switch known.isSynced(in: check.environment) {
        case false?:
            return
        case true?:
            check.report(
                .unboundedWriteOnSyncedTable, "\(action) every row of a synced table", line: line, statement: text)
        case nil:
            check.report(
                .unboundedWriteOnSyncedTable, "\(action) every row of a table that may be synced (unknown)",
                line: line, statement: text)
        }
    }
}
