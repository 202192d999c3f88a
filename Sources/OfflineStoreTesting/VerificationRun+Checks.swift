import Foundation
import OfflineStore

extension VerificationRun {
    /// Everything a migrated database must satisfy: no row lost, `integrity_check` ok,
    /// `foreign_key_check` empty, a complete ledger, and the schema of a fresh install (which is
    /// the declared latest schema).
    func checkMigratedDatabase(_ db: Database, _ scenario: Scenario, before: DatabaseContents) {
        checkRowsKept(db, scenario, before: before)
        checkIntegrity(db, scenario, when: "after migrating to \(latestVersion)")
        checkForeignKeys(db, scenario, when: "after migrating to \(latestVersion)")
        checkLedger(db, scenario)
        checkSchema(db, scenario)
    }

    /// Every key present before migrating is still present after, in every table.
    func checkRowsKept(_ db: Database, _ scenario: Scenario, before: DatabaseContents) {
        for (_, table) in before.keys.sorted(by: { $0.key < $1.key }) where !table.keys.isEmpty {
            do {
                guard try db.tableExists(table.table) else {
                    report(
                        .rowsLost, scenario, table: table.table,
                        "the table no longer exists after migrating to \(latestVersion): all \(table.keys.count) rows are gone"
                    )
                    continue
                }
                let now = Set(
                    try db.fetchAll(DatabaseContents.selectKeys(table.keyColumns, from: table.table)).map {
                        try $0.values()
                    })
                let missing = table.keys.subtracting(now)
                guard !missing.isEmpty else { continue }
                let sample = DatabaseContents.sorted(missing).prefix(5).map(DatabaseContents.render)
                report(
                    .rowsLost, scenario, table: table.table,
                    "\(missing.count) of \(table.keys.count) rows are gone after migrating to \(latestVersion)",
                    details: [
                        "missing \(table.keyDescription): \(sample.joined(separator: ", "))"
                            + (missing.count > sample.count ? ", …" : "")
                    ])
            } catch {
                report(.rowsLost, scenario, table: table.table, "could not read the rows back: \(error)")
            }
        }
    }

    /// `PRAGMA integrity_check` answers `ok`. See <https://www.sqlite.org/pragma.html#pragma_integrity_check>.
    func checkIntegrity(_ db: Database, _ scenario: Scenario, when: String) {
        do {
            let result = try db.fetchAll(String.self, "PRAGMA integrity_check")
            guard result != ["ok"] else { return }
            report(
                .integrityCheckFailed, scenario, "PRAGMA integrity_check \(when) reported \(result.count) problem(s)",
                details: Array(result.prefix(10)))
        } catch {
            report(.integrityCheckFailed, scenario, "PRAGMA integrity_check \(when) failed: \(error)")
        }
    }

    /// `PRAGMA foreign_key_check` is empty; violations are reported per child table.
    /// See <https://www.sqlite.org/pragma.html#pragma_foreign_key_check>.
    func checkForeignKeys(_ db: Database, _ scenario: Scenario, when: String) {
        do {
            var byTable: [String: (parents: Set<String>, rowIDs: [String])] = [:]
            for row in try db.fetchAll("PRAGMA foreign_key_check") {
                let table: String = try row.decode(at: 0)
                let rowID = try row.decode(Int64?.self, at: 1).map(String.init) ?? "(without rowid)"
                let parent: String = try row.decode(at: 2)
                byTable[table, default: ([], [])].parents.insert(parent)
                byTable[table, default: ([], [])].rowIDs.append(rowID)
            }
            for (table, violation) in byTable.sorted(by: { $0.key < $1.key }) {
                report(
                    .foreignKeyViolation, scenario, table: table,
                    "\(violation.rowIDs.count) row(s) reference missing rows of "
                        + "\(violation.parents.sorted().joined(separator: ", ")) \(when)",
                    details: ["rowids: " + violation.rowIDs.prefix(10).joined(separator: ", ")])
            }
        } catch {
            report(.foreignKeyViolation, scenario, "PRAGMA foreign_key_check \(when) failed: \(error)")
        }
    }

    /// The ledger records every stage of the plan, and every custom stage after the version the
    /// database was at really ran (was not adopted).
    func checkLedger(_ db: Database, _ scenario: Scenario) {
        do {
            let migrator = try Migrator(plan: verifier.plan)
            let applied = try migrator.appliedStages(db)
            if try !migrator.hasCompletedMigrations(db) {
                let recorded = applied.map { "\($0.position): \($0.toVersion) (\($0.kind))" }
                report(
                    .incompleteLedger, scenario,
                    "after migrating, the ledger does not record every stage up to \(latestVersion)",
                    details: ["recorded: " + (recorded.isEmpty ? "nothing" : recorded.joined(separator: ", "))])
            }
            guard let version = scenario.version, let start = versions.firstIndex(of: version) else { return }
            for stage in applied where stage.position > start && stage.adopted && stage.kind == "custom" {
                report(
                    .stageSkipped, scenario,
                    "stage \(stage.fromVersion?.description ?? "create") → \(stage.toVersion) (custom) was adopted "
                        + "without running on a database at \(version)",
                    details: [
                        "its willMigrate and didMigrate never ran here, though an upgrade from \(version) runs them"
                    ])
            }
        } catch {
            report(.incompleteLedger, scenario, "could not read the ledger: \(error)")
        }
    }

    /// The schema equals a fresh install's, and has no difference from the declared latest schema
    /// beyond the ones the fresh install itself has (reported once, in the fresh-install scenario).
    func checkSchema(_ db: Database, _ scenario: Scenario) {
        let live: SchemaSnapshot
        do {
            live = try SchemaSnapshot(liveDatabase: db)
        } catch {
            report(.schemaDiffersFromDeclaration, scenario, "could not read the schema: \(error)")
            return
        }
        let ownedByPlan: (SchemaDifference) -> Bool = { [planTables] in
            $0.kind != .unexpectedTable || planTables.contains($0.table.lowercased())
        }
        let declaredDifferences = live.differences(toReach: latestDeclared).filter(ownedByPlan)
        guard let freshSchema else {
            for difference in declaredDifferences {
                report(
                    .schemaDiffersFromDeclaration, scenario, table: difference.table, column: difference.column,
                    "the schema differs from the declared \(latestVersion): \(difference)")
            }
            return
        }
        let freshDifferences = live.differences(toReach: freshSchema).filter(ownedByPlan)
        for difference in freshDifferences {
            report(
                .schemaDiffersFromFreshInstall, scenario, table: difference.table, column: difference.column,
                "the schema differs from a fresh install's: \(difference)")
        }
        let explained = Set((freshDifferences + freshDeclaredDifferences).map(Self.subject))
        for difference in declaredDifferences where !explained.contains(Self.subject(difference)) {
            report(
                .schemaDiffersFromDeclaration, scenario, table: difference.table, column: difference.column,
                "the schema differs from the declared \(latestVersion): \(difference)")
        }
        // A backstop for anything the structured comparison does not see.
        if freshDifferences.isEmpty {
            let liveTables = Self.canonicalBlocks(live.canonicalText).filter { planTables.contains($0.key) }
            let freshTables = Self.canonicalBlocks(freshSchema.canonicalText).filter { planTables.contains($0.key) }
            for table in Set(liveTables.keys).union(freshTables.keys).sorted()
            where liveTables[table] != freshTables[table] {
                report(
                    .schemaDiffersFromFreshInstall, scenario, table: table,
                    "the canonical schema text differs from a fresh install's",
                    details: Self.lineDifferences(
                        freshTables[table] ?? [], liveTables[table] ?? [], "fresh", "migrated"))
            }
        }
    }

    /// Migrating an up-to-date database again left its schema, ledger and rows as they were.
    func compareSecondRun(_ first: DatabaseContents, _ second: DatabaseContents, _ scenario: Scenario) {
        if first.canonicalSchema != second.canonicalSchema {
            report(
                .changedWhenMigratedAgain, scenario, "migrating again changed the schema",
                details: Self.lineDifferences(
                    first.canonicalSchema.split(separator: "\n").map(String.init),
                    second.canonicalSchema.split(separator: "\n").map(String.init), "first run", "second run"))
        }
        if first.ledger != second.ledger {
            report(
                .changedWhenMigratedAgain, scenario, table: DatabaseContents.ledgerTable,
                "migrating again changed the ledger",
                details: Self.lineDifferences(
                    first.ledger.map(DatabaseContents.render), second.ledger.map(DatabaseContents.render), "first run",
                    "second run"))
        }
        for key in Set(first.rows.keys).union(second.rows.keys).sorted() where first.rows[key] != second.rows[key] {
            let before = first.rows[key] ?? []
            let after = second.rows[key] ?? []
            report(
                .changedWhenMigratedAgain, scenario, table: first.keys[key]?.table ?? second.keys[key]?.table ?? key,
                "migrating again changed the rows (\(before.count) before, \(after.count) after)",
                details: Array(
                    Self.lineDifferences(
                        before.map(DatabaseContents.render), after.map(DatabaseContents.render), "first run",
                        "second run"
                    ).prefix(6)))
        }
    }

    private static func subject(_ difference: SchemaDifference) -> String {
        [difference.table, difference.column ?? "", difference.index ?? ""].joined(separator: "|").lowercased()
    }

    /// The canonical text's lines per table (lowercased name).
    static func canonicalBlocks(_ text: String) -> [String: [String]] {
        var blocks: [String: [String]] = [:]
        var current: String?
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("table \"") {
                var name = ""
                var characters = line.dropFirst("table \"".count)[...]
                while let character = characters.first {
                    characters = characters.dropFirst()
                    if character == "\"" {
                        guard characters.first == "\"" else { break }
                        characters = characters.dropFirst()
                    }
                    name.append(character)
                }
                current = name.lowercased()
            }
            if let current { blocks[current, default: []].append(line) }
        }
        return blocks
    }

    /// The lines only one side has, each labelled with its side.
    static func lineDifferences(_ old: [String], _ new: [String], _ oldLabel: String, _ newLabel: String) -> [String] {
        let oldSet = Set(old)
        let newSet = Set(new)
        return old.filter { !newSet.contains($0) }.map { "\(oldLabel): \($0.trimmingCharacters(in: .whitespaces))" }
            + new.filter { !oldSet.contains($0) }.map { "\(newLabel): \($0.trimmingCharacters(in: .whitespaces))" }
    }
}
