// The rules the migration linter enforces: the design's rules 2-5 (additive, idempotent stages; pragmas
// before BEGIN; the documented table-rebuild order) and not losing synced data.
extension LintRule {
    /// `DROP TABLE` on a table that has rows, or whose row count is unknown.
    public static let dropTableWithRows = LintRule(
        id: "drop-table-with-rows", severity: .never,
        reason: "Dropping a table that holds rows deletes users' data; a migration must never lose data.",
        fix:
            "Keep the table and stop using it (deprecate it), or copy its rows first (INSERT INTO new SELECT ... "
            + "FROM old, as in a table rebuild); if the rows really are disposable, acknowledge the rule.")

    /// `ALTER TABLE ... DROP [COLUMN]`.
    public static let dropColumn = LintRule(
        id: "drop-column", severity: .never,
        reason:
            "Dropping a column deletes its data, and older app versions and peers that still read or sync it break.",
        fix:
            "Keep the column and stop writing it (deprecate it); a rename or type change is a new column, "
            + "a copy of the data, and the old column deprecated.")

    /// `ALTER TABLE ... ADD [COLUMN] ... NOT NULL` without a `DEFAULT` (or with `DEFAULT NULL`).
    public static let addColumnNotNullWithoutDefault = LintRule(
        id: "add-column-not-null-without-default", severity: .never,
        reason:
            "SQLite refuses to add a NOT NULL column without a non-NULL default (existing rows would have no value).",
        fix: "Add the column nullable, or NOT NULL with a DEFAULT (NOT NULL DEFAULT ''), then backfill it.")

    /// `ALTER TABLE a RENAME TO b` followed by `CREATE TABLE a` in the same stage: the rename-old-first rebuild.
    public static let renameOldTableFirst = LintRule(
        id: "rename-old-table-first", severity: .never,
        reason:
            "Renaming the old table before re-creating it makes SQLite rewrite the foreign keys, triggers and views "
            + "that refer to it to follow the renamed table, which is then dropped, leaving them dangling.",
        fix:
            "Rebuild in SQLite's documented 12-step order: CREATE TABLE new_X, copy the rows (INSERT INTO new_X "
            + "SELECT ... FROM X), DROP TABLE X, ALTER TABLE new_X RENAME TO X, recreate indexes and triggers, "
            + "PRAGMA foreign_key_check; or use MigrationContext.rebuildTable, which does exactly that "
            + "(https://www.sqlite.org/lang_altertable.html#otheralter).")

    /// `PRAGMA foreign_keys = ...` inside a transaction, where SQLite silently ignores it.
    public static let foreignKeysPragmaInTransaction = LintRule(
        id: "foreign-keys-pragma-in-transaction", severity: .never,
        reason: "SQLite silently ignores PRAGMA foreign_keys inside a transaction, so the statement does nothing.",
        fix:
            "Set PRAGMA foreign_keys before BEGIN, or use PRAGMA defer_foreign_keys = ON inside the transaction "
            + "and run PRAGMA foreign_key_check before COMMIT.")

    /// `CREATE TABLE|INDEX|VIEW|TRIGGER|VIRTUAL TABLE` without `IF NOT EXISTS`.
    public static let createWithoutIfNotExists = LintRule(
        id: "create-without-if-not-exists", severity: .warning,
        reason:
            "CREATE without IF NOT EXISTS is not idempotent: a re-run, or a purged and partly restored database, "
            + "fails on the object that already exists.",
        fix: "Write CREATE TABLE|INDEX|VIEW|TRIGGER|VIRTUAL TABLE IF NOT EXISTS ...")

    /// `ALTER TABLE ... ALTER COLUMN | MODIFY`, `PRAGMA writable_schema = ON`, writes to `sqlite_schema`.
    public static let columnTypeChangeInPlace = LintRule(
        id: "column-type-change-in-place", severity: .never,
        reason:
            "SQLite cannot change a column in place: ALTER COLUMN and MODIFY do not exist, and editing "
            + "sqlite_schema under writable_schema can corrupt the database.",
        fix:
            "Add a new column with the new type, copy the data into it (UPDATE ... SET new = CAST(old AS ...)) "
            + "and deprecate the old column; or rebuild the table with MigrationContext.rebuildTable.")

    /// `DELETE FROM t` or `UPDATE t SET ...` with no `WHERE` on a table that is synced, or may be.
    public static let unboundedWriteOnSyncedTable = LintRule(
        id: "unbounded-write-on-synced-table", severity: .never,
        reason:
            "A DELETE or UPDATE without WHERE on a synced table touches every row, on every peer it syncs to.",
        fix:
            "Add a WHERE clause that selects only the rows meant (a backfill: WHERE newColumn IS NULL); "
            + "if every row really is meant, acknowledge the rule.")

    /// An `-- ostore-lint:` directive that names no known rule or is not an `allow` directive.
    public static let unknownLintDirective = LintRule(
        id: "unknown-lint-directive", severity: .warning,
        reason: "A lint directive names a rule that does not exist, so it suppresses nothing (often a typo).",
        fix: "Write -- ostore-lint: allow RULE-ID[, RULE-ID] with ids from LintRule.all (see ostore lint --help).")

    /// Every built-in rule, in the order they are documented.
    public static let all: [LintRule] = [
        .dropTableWithRows, .dropColumn, .addColumnNotNullWithoutDefault, .renameOldTableFirst,
        .foreignKeysPragmaInTransaction, .createWithoutIfNotExists, .columnTypeChangeInPlace,
        .unboundedWriteOnSyncedTable, .unknownLintDirective,
    ]
}
