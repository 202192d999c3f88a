import OfflineStoreSQLite

/// A linting environment that reads row counts and the transaction state from a live database.
/// A table that does not exist has no rows; synced status is unknown (the change log does not exist yet).
///
/// It only reads (`SELECT count(*)`), so a read-only connection is enough:
///
/// ```swift
/// var configuration = Configuration()
/// configuration.readonly = true
/// let db = try Database(path: "app.sqlite", configuration: configuration)
/// var linter = SQLLinter()
/// let findings = try linter.lint(script: sql, environment: DatabaseLintEnvironment(db))
/// ```
public struct DatabaseLintEnvironment: LintEnvironment {
    public let database: Database

    public init(_ database: Database) {
        self.database = database
    }

    /// The table's row count, 0 when it does not exist, nil when the database cannot tell (an error).
    public func rowCount(ofTable table: String) -> Int? {
        do {
            guard try database.tableExists(table) else { return 0 }
            return try database.fetchValue(Int.self, "SELECT count(*) FROM \(identifier: table)")
        } catch {
            return nil
        }
    }

    public func isSynced(table: String) -> Bool? { nil }

    public var isInsideTransaction: Bool { database.isInsideTransaction }
}
