import OfflineStoreSQLite

/// Lints the statements stage code executes through a ``MigrationContext``, one at a time and
/// remembering earlier ones (a rename followed by a re-create, rows copied before a drop), with
/// what the migrator knows: the stage's transaction, live row counts, and which tables the target
/// schema syncs. NEVER findings the stage did not acknowledge fail it; warnings are logged.
final class StageLinter {
    private let targetSchema: SchemaSnapshot
    private var linter = SQLLinter()

    init(targetSchema: SchemaSnapshot) {
        self.targetSchema = targetSchema
    }

    func statements(in script: String) throws -> [String] {
        try SQLStatementSplitter.split(script).map(\.text)
    }

    func check(_ sql: String, in context: MigrationContext) throws {
        let environment = StageLintEnvironment(database: context.database, targetSchema: targetSchema)
        let findings = try linter.lint(statement: sql, environment: environment)
        var blocking: [LintFinding] = []
        for finding in findings {
            if finding.rule.severity == .never, !context.acknowledgedLintRules.contains(finding.rule.id) {
                blocking.append(finding)
            } else {
                context.database.configuration.logHandler.log(
                    .warning, "migration lint: \(finding.rule.id): \(finding.message)",
                    metadata: ["stage": context.stageLabel])
            }
        }
        guard let first = blocking.first else { return }
        throw MigrationError(
            .lintViolation, stage: context.stageLabel,
            "\(first.rule.id): \(first.message) (\(first.rule.reason))",
            fix: "\(first.rule.fix) If the stage really must, acknowledge the rule: "
                + ".custom(…, acknowledgingLintRules: [\"\(first.rule.id)\"], …). Nothing was changed.",
            details: blocking.map { "\($0.rule.id): \($0.statement)" })
    }
}

/// Inside a stage: always in a transaction; synced status from the target schema.
private struct StageLintEnvironment: LintEnvironment {
    let database: Database
    let targetSchema: SchemaSnapshot

    func rowCount(ofTable table: String) -> Int? { DatabaseLintEnvironment(database).rowCount(ofTable: table) }

    func isSynced(table: String) -> Bool? { targetSchema.table(named: table).map { $0.sync == .synced } }

    var isInsideTransaction: Bool { true }
}
