import OfflineStore

extension VerificationRun {
    /// A new empty database migrated to the latest version: checked against the declaration, and
    /// kept as the schema every other scenario must end with.
    func freshInstall() {
        let scenario = Scenario(name: "fresh install")
        guard let path = runScenario(scenario, from: nil) else { return }
        do {
            let db = try open(path)
            defer { try? db.close() }
            let live = try SchemaSnapshot(liveDatabase: db)
            freshSchema = live
            freshDeclaredDifferences = live.differences(toReach: latestDeclared)
        } catch {
            report(.scenarioSetupFailed, scenario, "could not read the fresh install's schema: \(error)")
        }
    }

    /// The release that shipped version `index`, installed on a new file and filled with rows
    /// (generated, or the seed's); the start of every scenario at that version.
    func buildTemplate(at index: Int) {
        let version = versions[index]
        let scenario = Scenario(name: "install \(version) with rows", version: nil)
        scenarios.append(scenario.name)
        let path = directory.newDatabasePath("template-\(version)")
        do {
            let db = try open(path)
            defer { if db.isOpen { try? db.close() } }
            do {
                try Migrator(plan: verifier.plan, releasedUpTo: version).migrate(db)
            } catch {
                reportMigrationError(error, scenario, action: "installing release \(version)")
                return
            }
            if let seed = verifier.seed {
                do {
                    try db.transaction { db in try seed(db, version) }
                } catch {
                    report(.seedFailed, scenario, "the seed failed at \(version): \(error)")
                    return
                }
            } else {
                var generator = SampleDataGenerator(
                    schema: declared[index], laterSchemas: Array(declared[(index + 1)...]),
                    rowsPerTable: verifier.rowsPerTable,
                    seed: verifier.randomSeed &+ UInt64(index))
                let shortfalls = try db.transaction { db in try generator.fill(db) }
                for shortfall in shortfalls {
                    report(
                        .dataGenerationIncomplete, scenario, table: shortfall.table,
                        "generated \(shortfall.inserted) of \(shortfall.wanted) rows",
                        details: [
                            "last refusal: \(shortfall.reason)",
                            "give MigrationPlanVerifier a seed that inserts rows valid for this table",
                        ])
                }
            }
            checkIntegrity(db, scenario, when: "after filling \(version)")
            checkForeignKeys(db, scenario, when: "after filling \(version)")
            try db.close()
            templates[version] = path
        } catch {
            report(.scenarioSetupFailed, scenario, "could not build the database at \(version): \(error)")
        }
    }

    /// The filled database at version `index` opened by the latest release.
    func upgrade(from index: Int) {
        let version = versions[index]
        let name = index == versions.count - 1 ? "reopen at \(version) (the latest)" : "upgrade from \(version)"
        runScenario(Scenario(name: name, version: version), from: index)
    }

    /// The stage leading to version `index` runs again on the database it already migrated (its
    /// ledger entry removed): every stage must be idempotent.
    func runStageAgain(at index: Int) {
        let scenario = Scenario(
            name: "stage \(versions[index - 1]) → \(versions[index]) run again on a database it migrated",
            version: versions[index])
        runScenario(scenario, from: index) { db, _ in try DatabaseDamage.forgetStage(at: index, db) }
    }

    /// The filled database at version `index` without its ledger: it must be adopted, rows intact.
    func wipeLedger(at index: Int) {
        let scenario = Scenario(name: "ledger wiped at \(versions[index])", version: versions[index])
        runScenario(scenario, from: index) { db, _ in try DatabaseDamage.wipeLedger(db) }
    }

    /// The filled database at version `index` with objects of the next version already present,
    /// one at a time and all together: the next stage must complete anyway.
    func halfMigrate(from index: Int) {
        let version = versions[index]
        let next = declared[index + 1]
        let kindOrder: [SchemaDifference.Kind] = [.missingTable, .missingColumn, .missingIndex]
        let changes = declared[index].differences(toReach: next)
            .filter { $0.isAdditive && kindOrder.contains($0.kind) }
            .sorted { kindOrder.firstIndex(of: $0.kind)! < kindOrder.firstIndex(of: $1.kind)! }
        func sql(for change: SchemaDifference) -> String? {
            guard let table = next.table(named: change.table) else { return nil }
            switch change.kind {
            case .missingTable:
                return table.createTableSQL()
            case .missingColumn:
                return table.columns.first { $0.name.lowercased() == change.column?.lowercased() }
                    .map(table.addColumnSQL)
            default:
                return table.indexes.first { $0.name.lowercased() == change.index?.lowercased() }
                    .map(table.createIndexSQL)
            }
        }
        /// An index on a column that is new too needs the column first.
        func prerequisites(of change: SchemaDifference) -> [SchemaDifference] {
            guard change.kind == .missingIndex, let table = next.table(named: change.table),
                let index = table.indexes.first(where: { $0.name.lowercased() == change.index?.lowercased() })
            else { return [] }
            let named = Set(index.columns.map { $0.name.lowercased() })
                .union(index.condition.map { CheckLiterals($0).identifiers } ?? [])
            return changes.filter {
                $0.kind == .missingColumn && $0.table.lowercased() == change.table.lowercased()
                    && named.contains($0.column?.lowercased() ?? "")
            }
        }
        let prefix = "half-migrated \(version) → \(versions[index + 1])"
        for change in changes {
            let statements = (prerequisites(of: change) + [change]).compactMap(sql(for:))
            guard statements.count == prerequisites(of: change).count + 1 else { continue }
            let object =
                switch change.kind {
                case .missingTable: "table \(change.table) already created"
                case .missingColumn: "column \(change.table).\(change.column ?? "?") already added"
                default: "index \(change.index ?? "?") already created"
                }
            runScenario(Scenario(name: "\(prefix): \(object)", version: version, table: change.table), from: index) {
                db, _ in
                for statement in statements { try db.execute(sql: statement) }
            }
        }
        guard changes.count > 1 else { return }
        runScenario(Scenario(name: "\(prefix): every additive change already made", version: version), from: index) {
            db, _ in
            for change in changes { if let statement = sql(for: change) { try db.execute(sql: statement) } }
        }
    }

    /// The filled database at version `index` with one table (and the rows that pointed at it)
    /// dropped: the migrator must recreate it.
    func dropTable(_ table: String, at index: Int) {
        let scenario = Scenario(
            name: "table \(table) dropped at \(versions[index])", version: versions[index], table: table)
        runScenario(scenario, from: index) { db, _ in try DatabaseDamage.dropTable(table, in: db) }
    }

    /// The filled database at version `index` with one column dropped (`ALTER TABLE DROP COLUMN`),
    /// for each column ADD COLUMN can restore: re-running the stage that declared it must.
    func dropColumns(at index: Int) {
        let version = versions[index]
        for table in declared[index].tables where !table.isFTS5 {
            for column in Self.restorableColumns(of: table, in: declared[index]) {
                let scenario = Scenario(
                    name: "column \(table.name).\(column) dropped at \(version)", version: version, table: table.name)
                runScenario(scenario, from: index) { db, _ in
                    do {
                        try db.execute("ALTER TABLE \(identifier: table.name) DROP COLUMN \(identifier: column)")
                    } catch {
                        // A view or trigger of the app names it: SQLite refuses, nothing to verify.
                        throw ScenarioNotApplicable()
                    }
                }
            }
        }
    }

    /// The filled database at version `index` with one declared index dropped.
    func dropIndexes(at index: Int) {
        for table in declared[index].tables {
            for declaredIndex in table.indexes {
                let scenario = Scenario(
                    name: "index \(declaredIndex.name) dropped at \(versions[index])", version: versions[index],
                    table: table.name)
                runScenario(scenario, from: index) { db, _ in
                    try db.execute("DROP INDEX \(identifier: declaredIndex.name)")
                }
            }
        }
    }

    /// Columns SQLite can drop and ADD COLUMN can add back: not part of a key, a UNIQUE constraint,
    /// an index, a foreign key or another column's CHECK; nullable or NOT NULL with a literal DEFAULT.
    static func restorableColumns(of table: TableDefinition, in schema: SchemaSnapshot) -> [String] {
        var pinned = Set((table.primaryKey + table.uniqueConstraints.flatMap { $0 }).map { $0.lowercased() })
        for index in table.indexes {
            pinned.formUnion(index.columns.map { $0.name.lowercased() })
            pinned.formUnion(index.condition.map { CheckLiterals($0).identifiers } ?? [])
        }
        for check in table.checks { pinned.formUnion(CheckLiterals(check).identifiers) }
        for column in table.columns {
            for check in column.checks {
                pinned.formUnion(CheckLiterals(check).identifiers.subtracting([column.name.lowercased()]))
            }
        }
        pinned.formUnion(table.foreignKeys.flatMap(\.columns).map { $0.lowercased() })
        for other in schema.tables {
            for reference in other.foreignKeys + other.columns.compactMap(\.reference)
            where reference.parentTable.lowercased() == table.name.lowercased() {
                pinned.formUnion(reference.parentColumns.map { $0.lowercased() })
            }
        }
        return table.columns.filter { column in
            guard !pinned.contains(column.name.lowercased()), !column.isPrimaryKey, !column.isUnique,
                column.reference == nil, !column.type.rawValue.hasSuffix("GENERATED")
            else { return false }
            switch column.defaultValue {
            case .expression: return false
            case .literal(let value): return !(column.isNotNull && value == .null)
            case nil: return !column.isNotNull
            }
        }.map(\.name)
    }

    /// The database file deleted (purged by the OS): the next open is a fresh install.
    func deleteFile() {
        let scenario = Scenario(name: "database file deleted at \(latestVersion)", version: latestVersion)
        runScenario(scenario, from: versions.count - 1) { db, path in
            try db.close()
            try ScratchDirectory.deleteDatabase(at: path)
        }
    }
}
