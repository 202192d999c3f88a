/// A hazard the migration linter looks for, with why it matters and what to write instead.
///
/// ```swift
/// for rule in LintRule.all where rule.severity == .never {
///     print("\(rule.id): \(rule.reason)")
/// }
/// LintRule(id: "drop-column")  // Optional(LintRule.dropColumn)
/// ```
public struct LintRule: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// How serious a finding is.
    public enum Severity: String, Sendable, Hashable {
        /// Never do this: it fails a migration stage unless the stage acknowledges the rule by id.
        case never
        /// Probably a mistake: reported, but does not fail a stage.
        case warning
    }

    /// A kebab-case name, used in findings and in `-- ostore-lint: allow RULE-ID` directives.
    public let id: String
    public let severity: Severity
    /// Why it is a hazard, in one line.
    public let reason: String
    /// What to do instead.
    public let fix: String

    public init(id: String, severity: Severity, reason: String, fix: String) {
        self.id = id
        self.severity = severity
        self.reason = reason
        self.fix = fix
    }

    /// The built-in rule with that id, if any.
    public init?(id: String) {
        guard let rule = Self.all.first(where: { $0.id == id }) else { return nil }
        self = rule
    }

    public var description: String { id }
}
