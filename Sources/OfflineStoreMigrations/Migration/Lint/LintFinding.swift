/// One hazard the linter found in one statement.
///
/// ```swift
/// var linter = SQLLinter()
/// for finding in try linter.lint(script: "ALTER TABLE notes DROP COLUMN body") {
///     print(finding)  // line 1: drop-column: ALTER TABLE "notes" drops column "body" and its data
///     print(finding.rule.fix)
/// }
/// ```
public struct LintFinding: Sendable, Hashable, CustomStringConvertible {
    public let rule: LintRule
    /// The 1-based line of the statement (of the offending statement inside a trigger body).
    public let line: Int
    /// The statement's source text.
    public let statement: String
    /// What is wrong, naming the table and column concerned.
    public let message: String

    public init(rule: LintRule, line: Int, statement: String, message: String) {
        self.rule = rule
        self.line = line
        self.statement = statement
        self.message = message
    }

    public var description: String { "line \(line): \(rule.id): \(message)" }
}
