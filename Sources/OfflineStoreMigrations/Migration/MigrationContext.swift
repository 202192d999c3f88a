import Foundation
import OfflineStoreSQLite

/// What stage code sees: the database inside the stage's transaction, whether the database was
/// fresh, checks for what exists, linted execution, and the table-rebuild helper.
///
/// Writes should go through ``execute(_:)`` so the linter checks them; reads may use
/// ``database`` directly.
///
/// ```swift
/// didMigrate: { context in
///     guard try context.columnExists("dueDate", in: "reminders") else { return }  // purged: nothing to copy
///     try context.execute("UPDATE reminders SET dueAt = unixepoch(dueDate) WHERE dueAt IS NULL AND dueDate IS NOT NULL")
/// }
/// ```
public final class MigrationContext {
    public enum Phase: String, Sendable {
        case willMigrate
        case didMigrate
    }

    /// The connection, inside the stage's transaction. Do not commit, roll back or change
    /// `PRAGMA foreign_keys` through it.
    public let database: Database
    public let fromVersion: Schema.Version?
    public let toVersion: Schema.Version
    /// True when the migration started on a database with none of the plan's tables (new, or
    /// purged by the OS): backfills have nothing to do.
    public let isFreshDatabase: Bool
    public internal(set) var phase: Phase = .willMigrate
    /// The declared schema this stage produces.
    public let targetSchema: SchemaSnapshot
    /// Whether the stage asked for its writes to be recorded as user changes for sync
    /// (``MigrationStage/recordsChanges``); off by default, since every peer runs the same stage.
    /// Either way the code runs with the connection's recording off: a recording stage's writes are
    /// noted and recorded once the change log opens.
    public let recordsChanges: Bool

    let stageLabel: String
    let acknowledgedLintRules: Set<String>
    let progress: (@Sendable (MigrationProgress) -> Void)?
    let linter: StageLinter
    /// Every statement the stage executed, in order, for dry runs.
    var executedSQL: [String] = []
    /// The table whose foreign keys a rebuild checked last, with the connection's change counter
    /// and the schema cookie at that moment. While neither moves, that check still holds and the
    /// stage-end check need not read the table again (a whole pass over a table of millions).
    var foreignKeysChecked: (table: String, totalChanges: Int, schemaCookie: Int)?
    /// The change log's bookkeeping, where the stage notes the changes it records (the migrator's).
    let bookkeeping: (any ChangeLogBookkeeping.Type)?

    init(
        database: Database, step: MigrationStep, isFreshDatabase: Bool,
        progress: (@Sendable (MigrationProgress) -> Void)?, bookkeeping: (any ChangeLogBookkeeping.Type)?
    ) {
        self.database = database
        self.bookkeeping = bookkeeping
        fromVersion = step.fromVersion
        toVersion = step.toVersion
        self.isFreshDatabase = isFreshDatabase
        targetSchema = step.target
        stageLabel = step.label
        acknowledgedLintRules = step.stage?.acknowledgedLintRules ?? []
        recordsChanges = step.stage?.recordsChanges ?? false
        self.progress = progress
        linter = StageLinter(targetSchema: step.target)
    }

    /// Executes one statement after linting it; a NEVER finding the stage did not acknowledge
    /// fails the stage with the rule, the reason and the fix.
    public func execute(_ sql: SQL) throws {
        try linter.check(sql.text, in: self)
        try run(sql)
    }

    /// Executes a script statement by statement, linting each.
    public func executeScript(_ script: String) throws {
        for statement in try linter.statements(in: script) {
            try linter.check(statement, in: self)
            try run(SQL(sql: statement))
        }
    }

    /// The migrator's own SQL: recorded for dry runs, not linted (it is the declarative path).
    func run(_ sql: SQL) throws {
        executedSQL.append(sql.text)
        try database.execute(sql)
    }

    /// The change log's bookkeeping, for a stage that records changes; a misuse on a migrator made
    /// without it (one for files no change log opens).
    func changeLogBookkeeping() throws(MigrationError) -> any ChangeLogBookkeeping.Type {
        guard let bookkeeping else {
            throw MigrationError(
                .misuse, stage: stageLabel, "the stage records changes, but this migrator has no change log",
                fix: "record changes only in the plan of a store that opens a ChangeLog")
        }
        return bookkeeping
    }

    public func tableExists(_ table: String) throws -> Bool { try database.tableExists(table) }

    public func columnExists(_ column: String, in table: String) throws -> Bool {
        try database.columnExists(column, in: table)
    }

    /// The number of rows of a table; 0 when the table does not exist.
    public func rowCount(_ table: String) throws -> Int {
        guard try tableExists(table) else { return 0 }
        return try database.fetchValue(Int.self, "SELECT count(*) FROM \(identifier: table)") ?? 0
    }

    /// The table a rebuild checked for foreign-key violations, if no row was written and the
    /// schema did not change since: rows or parents that moved, a dropped or renamed parent, all
    /// move one or the other.
    func tableStillCheckedForForeignKeys() throws -> String? {
        guard let checked = foreignKeysChecked, checked.totalChanges == database.totalChangesCount,
            checked.schemaCookie == (try MigrationLedger.schemaCookie(database))
        else { return nil }
        return checked.table
    }

    /// Reports progress of a long operation (rows done of rows total) to the migrator's observer.
    public func reportProgress(operation: String, done: Int, total: Int) {
        progress?(.rows(stage: stageLabel, operation: operation, done: done, total: total))
    }

    /// Runs `UPDATE table SET assignments WHERE condition` in batches of `batchSize` rows (by rowid)
    /// and reports progress; a no-op when the table does not exist. Returns the rows updated.
    ///
    /// ```swift
    /// try context.updateInBatches("reminders", set: "dueAt = unixepoch(dueDate)", where: "dueAt IS NULL AND dueDate IS NOT NULL")
    /// ```
    @discardableResult
    public func updateInBatches(
        _ table: String, set assignments: String, where condition: String, batchSize: Int = 10_000
    ) throws -> Int {
        guard try tableExists(table) else { return 0 }
        let quoted = quoteIdentifier(table)
        let total =
            try database.fetchValue(Int.self, SQL(sql: "SELECT count(*) FROM \(quoted) WHERE \(condition)")) ?? 0
        var done = 0
        var lastRowID: Int64 = .min
        while done < total {
            let upper =
                try database.fetchValue(
                    Int64.self,
                    SQL(
                        sql:
                            "SELECT max(rowid) FROM (SELECT rowid FROM \(quoted) WHERE rowid > ? ORDER BY rowid LIMIT ?)",
                        arguments: [.integer(lastRowID), .integer(Int64(batchSize))]))
            guard let upper else { break }
            let statement = SQL(
                sql: "UPDATE \(quoted) SET \(assignments) WHERE rowid > ? AND rowid <= ? AND (\(condition))",
                arguments: [.integer(lastRowID), .integer(upper)])
            try linter.check(statement.text, in: self)
            try run(statement)
            done += database.changesCount
            lastRowID = upper
            reportProgress(operation: "update \(table)", done: min(done, total), total: total)
        }
        return done
    }
}
