import Foundation
import OfflineStore

/// Thrown by a scenario's preparation when the plan's database cannot be put into that state at
/// all (SQLite refuses it): the scenario is skipped, not reported.
struct ScenarioNotApplicable: Error {}

/// One run of ``MigrationPlanVerifier/verify()``: the plan's declared versions, a filled template
/// database at each version, the fresh-install schema every other scenario is compared with, and
/// the problems found so far.
final class VerificationRun {
    typealias Problem = MigrationPlanVerifier.Problem

    /// A scenario's name and starting point, for naming its problems.
    struct Scenario {
        var name: String
        /// The version the database is at when the scenario starts.
        var version: Schema.Version?
        /// The table the scenario is about, if one.
        var table: String?
    }

    let verifier: MigrationPlanVerifier
    let directory: ScratchDirectory
    var problems: [Problem] = []
    var scenarios: [String] = []

    var versions: [Schema.Version] = []
    var declared: [SchemaSnapshot] = []
    /// Every table any version declares (lowercased): the tables the plan owns.
    var planTables: Set<String> = []
    /// What a fresh install produces; nil when the fresh install failed.
    var freshSchema: SchemaSnapshot?
    /// How the fresh install differs from the declared latest schema (reported once, there).
    var freshDeclaredDifferences: [SchemaDifference] = []
    /// A closed database file at each version, filled with rows.
    var templates: [Schema.Version: String] = [:]

    var latestVersion: Schema.Version { versions[versions.count - 1] }
    var latestDeclared: SchemaSnapshot { declared[declared.count - 1] }

    init(verifier: MigrationPlanVerifier, directory: ScratchDirectory) {
        self.verifier = verifier
        self.directory = directory
    }

    func runAllScenarios() {
        guard loadPlan() else { return }
        freshInstall()
        for index in versions.indices { buildTemplate(at: index) }
        for index in versions.indices { upgrade(from: index) }
        for index in versions.indices.dropFirst() { runStageAgain(at: index) }
        for index in versions.indices { wipeLedger(at: index) }
        for index in versions.indices.dropLast() { halfMigrate(from: index) }
        for index in versions.indices {
            for table in declared[index].tables { dropTable(table.name, at: index) }
            dropColumns(at: index)
            dropIndexes(at: index)
        }
        deleteFile()
    }

    /// Validates the plan the way the migrator does; a refused plan is the only problem reported.
    private func loadPlan() -> Bool {
        let scenario = Scenario(name: "plan validation")
        scenarios.append(scenario.name)
        do {
            _ = try Migrator(plan: verifier.plan)
            versions = verifier.plan.schemas.map { $0.versionIdentifier }
            declared = try verifier.plan.schemas.map { try $0.snapshot() }
        } catch {
            reportMigrationError(error, scenario, action: "validating the plan", kind: .invalidPlan)
            return false
        }
        planTables = Set(declared.flatMap { $0.tables.map { $0.name.lowercased() } })
        return true
    }

    // MARK: - Running a scenario

    /// Opens a scenario's database as an app would (foreign keys on, WAL), without waiting for the
    /// disk: the files are thrown away, so `synchronous = OFF` costs nothing and halves the time.
    func open(_ path: String) throws -> Database {
        var configuration = Configuration()
        configuration.synchronous = .off
        return try Database(path: path, configuration: configuration)
    }

    /// Runs one scenario: copies the filled template at `start` (or starts from nothing), lets
    /// `prepare` put the database into the scenario's state, migrates it to the latest version
    /// and checks it, then migrates it again and checks that nothing changed. Returns the path of
    /// the migrated database, or nil when it could not be migrated.
    @discardableResult
    func runScenario(
        _ scenario: Scenario, from start: Int?, prepare: (Database, String) throws -> Void = { _, _ in }
    ) -> String? {
        let path: String
        if let start {
            // When the template could not be built, that was reported and its scenarios are skipped.
            guard let template = templates[versions[start]] else { return nil }
            scenarios.append(scenario.name)
            do {
                path = try directory.copyDatabase(at: template, label: scenario.name)
            } catch {
                report(.scenarioSetupFailed, scenario, table: scenario.table, "could not copy the template: \(error)")
                return nil
            }
        } else {
            scenarios.append(scenario.name)
            path = directory.newDatabasePath(scenario.name)
        }
        do {
            let db = try open(path)
            try prepare(db, path)
            if db.isOpen { try db.close() }
        } catch is ScenarioNotApplicable {
            scenarios.removeLast()
            return nil
        } catch {
            report(
                .scenarioSetupFailed, scenario, table: scenario.table,
                "could not put the database into the scenario's state: \(error)")
            return nil
        }
        return migrateAndCheck(path: path, scenario) ? path : nil
    }

    /// Migrates the database at `path` to the latest version with a fresh migrator, checks it,
    /// migrates it again after reopening, and checks nothing changed.
    private func migrateAndCheck(path: String, _ scenario: Scenario) -> Bool {
        let db: Database
        let before: DatabaseContents
        do {
            db = try open(path)
            before = try DatabaseContents(of: db, includingRows: false)
        } catch {
            report(.scenarioSetupFailed, scenario, table: scenario.table, "could not open the database: \(error)")
            return false
        }
        defer { if db.isOpen { try? db.close() } }
        do {
            try Migrator(plan: verifier.plan).migrate(db)
        } catch {
            reportMigrationError(error, scenario, action: "migrating to \(latestVersion)")
            return false
        }
        checkMigratedDatabase(db, scenario, before: before)
        do {
            let first = try DatabaseContents(of: db, includingRows: true)
            try db.close()
            let reopened = try open(path)
            defer { try? reopened.close() }
            do {
                try Migrator(plan: verifier.plan).migrate(reopened)
            } catch {
                reportMigrationError(error, scenario, action: "migrating the migrated database again")
                return true
            }
            compareSecondRun(first, try DatabaseContents(of: reopened, includingRows: true), scenario)
        } catch {
            report(.scenarioSetupFailed, scenario, "could not read the migrated database: \(error)")
        }
        return true
    }

    // MARK: - Reporting

    func report(
        _ kind: Problem.Kind, _ scenario: Scenario, table: String? = nil, column: String? = nil, _ message: String,
        details: [String] = []
    ) {
        problems.append(
            Problem(
                kind: kind, scenario: scenario.name, version: scenario.version, table: table, column: column,
                message: message, details: details))
    }

    /// Turns an error the migrator threw into problems: one per schema difference it lists, the
    /// child table named for a foreign-key refusal, the scenario's table otherwise.
    func reportMigrationError(
        _ error: any Error, _ scenario: Scenario, action: String, kind: Problem.Kind = .migrationFailed
    ) {
        guard let error = error as? MigrationError else {
            report(kind, scenario, table: scenario.table, "\(action) failed: \(error)")
            return
        }
        let message = "\(action) failed" + (error.stage.map { " in stage \($0)" } ?? "") + ": \(error.message)"
        var details = error.details
        if let fix = error.fix { details.append("fix: \(fix)") }
        if error.kind == .foreignKeyViolation {
            // The migrator lists offending rows as "<child table> rowid <n> references a missing row of <parent>".
            let child = error.details.first?.components(separatedBy: " rowid ").first
            report(.foreignKeyViolation, scenario, table: child ?? scenario.table, message, details: details)
            return
        }
        guard !error.differences.isEmpty else {
            report(kind, scenario, table: scenario.table, message, details: details)
            return
        }
        for difference in error.differences {
            report(
                kind, scenario, table: difference.table, column: difference.column, message + " — \(difference)",
                details: details)
        }
    }
}
