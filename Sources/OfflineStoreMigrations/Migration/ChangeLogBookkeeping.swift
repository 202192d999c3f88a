import OfflineStoreSQLite

/// What the migrator needs from the change log's bookkeeping in the user's file, which the change
/// log implements (`LogCoverage` in OfflineStoreChangeLog) and hands to every migrator an app makes
/// (``Migrator/init(plan:releasedUpTo:options:)`` is declared there), so that this layer does not
/// depend on the one above it:
///
/// - a stage that records changes (``MigrationStage/recordsChanges``,
///   ``MigrationContext/recordChanges(in:columns:where:)``) notes rows in the change log's table of
///   stage changes (``stageChangesTable``: `tableName`, `pk` as the log keys rows, `columnName`
///   empty for a whole row), created with the other bookkeeping tables if the log never opened on
///   the file; the change log records them when it next opens;
/// - a stage run on a connection without the metadatabase looks to the change log's permanent
///   triggers like another program's writes, and they note its rows; every device runs the same
///   stage, so the migrator forgets those notes (``notedRows(_:)`` before, then
///   ``forgetRowsNoted(_:since:)``).
///
/// A migrator made without it (the reference server's, `init(plan:releasedUpTo:options:bookkeeping:)`
/// with nil) notes and forgets nothing, and fails a stage that asks to record its changes.
package protocol ChangeLogBookkeeping: SendableMetatype {
    /// The table in `main` where stages note what to record: `(tableName, pk, columnName)`.
    static var stageChangesTable: String { get }
    /// Creates the bookkeeping tables in the user's file unless they exist.
    static func createBookkeepingTables(on db: Database) throws
    /// The rows noted as written outside the store, each as `quote(tableName),quote(pk)`; nil when
    /// the store never installed its permanent triggers.
    static func notedRows(_ db: Database) throws -> [String]?
    /// Forgets the rows noted since `before` (``notedRows(_:)``) was read.
    static func forgetRowsNoted(_ db: Database, since before: [String]?) throws
    /// The primary-key columns of a table, in key order.
    static func keyColumns(of table: TableDefinition) -> [String]
    /// The SQL expression of a row's key as the log stores it, over `row` (`NEW`, `OLD`, an alias).
    static func keyExpression(_ columns: [String], row: String) -> String
}
