import OfflineStoreSQLite

/// Checks migration SQL against the ``LintRule``s, statement by statement.
///
/// A linter follows one script or migration stage: it remembers what earlier statements did (BEGIN and COMMIT,
/// tables created, renamed, dropped or copied), so a stage can feed it a whole script at once or each statement
/// just before running it. Use a new linter for each stage.
///
/// Findings are suppressed per statement by a comment on the lines before it (or inside it):
///
/// ```swift
/// var linter = SQLLinter()
/// let findings = try linter.lint(
///     script: """
///         CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY NOT NULL, body TEXT);
///         -- ostore-lint: allow drop-column
///         ALTER TABLE notes DROP COLUMN legacy;
///         ALTER TABLE notes ADD COLUMN title TEXT NOT NULL;
///         """,
///     environment: StandaloneLintEnvironment())
/// findings.map(\.rule.id)  // ["add-column-not-null-without-default"]
/// findings[0].line         // 4
/// ```
public struct SQLLinter: Sendable {
    /// Known once the first statement is seen: the environment says how the script starts.
    var transaction: TransactionTracker?
    /// Tables that statements seen so far created, dropped, renamed, filled or copied; by lower-cased name.
    var tables: [String: TableFacts] = [:]
    /// `ALTER TABLE a RENAME TO b` seen so far, by the lower-cased old name `a`.
    var renamedAway: [String: TableRename] = [:]

    /// A table renamed away, remembered in case the script re-creates its old name.
    struct TableRename {
        var from: QualifiedName
        var to: String
        var line: Int
        var statement: String
        /// Rules the rename statement's directives allow.
        var allowed: Set<String>
    }

    public init() {}

    /// Lints every statement of `script`, continuing from the statements this linter has already seen.
    /// Findings are in line order. Throws only when the script cannot be tokenized.
    public mutating func lint(
        script: String, environment: any LintEnvironment = StandaloneLintEnvironment()
    ) throws(SQLSyntaxError) -> [LintFinding] {
        try lint(statement: script, startingLine: 1, environment: environment)
    }

    /// Lints the statement (or statements) about to run, continuing from those this linter has already seen.
    ///
    /// A migration stage that runs its SQL one statement at a time lints each just before running it:
    ///
    /// ```swift
    /// var linter = SQLLinter()
    /// let environment = DatabaseLintEnvironment(db)
    /// for (line, sql) in stageStatements {
    ///     let findings = try linter.lint(statement: sql, startingLine: line, environment: environment)
    ///     let unacknowledged = findings.filter { $0.rule.severity == .never && !acknowledged.contains($0.rule.id) }
    ///     guard unacknowledged.isEmpty else { throw StageRefused(findings: unacknowledged) }
    ///     try db.execute(sql: sql)
    /// }
    /// ```
    ///
    /// - Parameter startingLine: the line of `sql` in its file, so findings point into the file.
    public mutating func lint(
        statement sql: String, startingLine: Int = 1, environment: any LintEnvironment = StandaloneLintEnvironment()
    ) throws(SQLSyntaxError) -> [LintFinding] {
        let (statements, strayComments) = try SQLStatementSplitter.splitKeepingStrayComments(
            sql, firstLine: startingLine)
        var findings: [LintFinding] = []
        for statement in statements {
            findings += lint(statement, environment: environment)
        }
        // Directives after the last statement suppress nothing, but a misspelt one is still worth reporting.
        findings += LintDirectives(strayComments).problems.map {
            LintFinding(rule: .unknownLintDirective, line: $0.line, statement: "", message: $0.message)
        }
        return findings.enumerated()
            .sorted { ($0.element.line, $0.offset) < ($1.element.line, $1.offset) }
            .map(\.element)
    }

    /// Lints one statement already split by ``SQLStatementSplitter``, continuing from those already seen.
    public mutating func lint(
        _ statement: SQLStatement, environment: any LintEnvironment = StandaloneLintEnvironment()
    ) -> [LintFinding] {
        if transaction == nil {
            transaction = TransactionTracker(isInsideTransaction: environment.isInsideTransaction)
        }
        let directives = LintDirectives(statement.comments)
        var check = StatementCheck(statement: statement, environment: environment)
        apply(StatementShape(statement.tokens[...]), to: &check, directives: directives)
        let directiveProblems = directives.problems.map {
            LintFinding(rule: .unknownLintDirective, line: $0.line, statement: statement.text, message: $0.message)
        }
        return directiveProblems + check.findings.filter { !directives.allows($0.rule) }
    }

    /// The table's facts so far: what the script did to it, or else what the environment knows.
    func facts(_ table: QualifiedName) -> TableFacts {
        tables[table.key] ?? TableFacts(origin: .environment(table.name), isTemporary: table.isTemporary)
    }
}

/// One statement being checked: where findings point, and the findings so far.
struct StatementCheck {
    let statement: SQLStatement
    let environment: any LintEnvironment
    private(set) var findings: [LintFinding] = []

    init(statement: SQLStatement, environment: any LintEnvironment) {
        self.statement = statement
        self.environment = environment
    }

    mutating func report(_ rule: LintRule, _ message: String, line: Int? = nil, statement text: String? = nil) {
        findings.append(
            LintFinding(
                rule: rule, line: line ?? statement.line, statement: text ?? statement.text, message: message))
    }
}
