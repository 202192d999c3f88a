/// A linting environment whose knowledge the caller states: row counts and synced status for some tables.
/// Tables missing from a dictionary are unknown; names compare case-insensitively, like SQLite's.
///
/// ```swift
/// let environment = KnownLintEnvironment(
///     rowCounts: ["drafts": 0, "notes": 1200],
///     syncedTables: ["notes": true, "local_cache": false],
///     isInsideTransaction: true)
/// var linter = SQLLinter()
/// let findings = try linter.lint(script: "DROP TABLE drafts; DELETE FROM local_cache", environment: environment)
/// // [] : drafts is empty, local_cache is not synced
/// ```
public struct KnownLintEnvironment: LintEnvironment, Sendable, Hashable {
    private var rowCounts: [String: Int]
    private var syncedTables: [String: Bool]
    public var isInsideTransaction: Bool

    public init(rowCounts: [String: Int] = [:], syncedTables: [String: Bool] = [:], isInsideTransaction: Bool = false) {
        self.rowCounts = Dictionary(rowCounts.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: max)
        self.syncedTables = Dictionary(
            syncedTables.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $0 || $1 })
        self.isInsideTransaction = isInsideTransaction
    }

    public func rowCount(ofTable table: String) -> Int? { rowCounts[table.lowercased()] }

    public func isSynced(table: String) -> Bool? { syncedTables[table.lowercased()] }
}
