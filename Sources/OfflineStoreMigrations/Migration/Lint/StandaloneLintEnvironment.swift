/// A linting environment that knows nothing about the database: every table may have rows and may be synced,
/// and the script starts outside a transaction. The linter therefore reports everything that could be a hazard.
///
/// ```swift
/// var linter = SQLLinter()
/// let findings = try linter.lint(script: sql, environment: StandaloneLintEnvironment())
/// ```
public struct StandaloneLintEnvironment: LintEnvironment, Sendable {
    public init() {}

    public func rowCount(ofTable table: String) -> Int? { nil }

    public func isSynced(table: String) -> Bool? { nil }

    public var isInsideTransaction: Bool { false }
}
