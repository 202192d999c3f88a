/// What the linter knows about the database a script will run on. Every piece of knowledge is optional:
/// where it is missing the linter assumes the worst (a table may have rows, may be synced).
///
/// ```swift
/// struct Catalog: LintEnvironment {
///     func rowCount(ofTable table: String) -> Int? { table == "drafts" ? 0 : nil }
///     func isSynced(table: String) -> Bool? { table.hasPrefix("local_") ? false : nil }
///     var isInsideTransaction: Bool { true }  // each stage runs in one transaction
/// }
/// var linter = SQLLinter()
/// let findings = try linter.lint(script: "DROP TABLE drafts", environment: Catalog())  // []
/// ```
public protocol LintEnvironment {
    /// How many rows the table has now; nil when unknown. Names compare case-insensitively, like SQLite's.
    func rowCount(ofTable table: String) -> Int?
    /// Whether the table's changes are synced to other peers; nil when unknown.
    func isSynced(table: String) -> Bool?
    /// Whether the script starts inside a transaction; the linter follows BEGIN, COMMIT and friends from there.
    var isInsideTransaction: Bool { get }
}
