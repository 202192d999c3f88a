import Foundation
import OfflineStoreSQLite

extension Migrator {
    enum ReconcileMode {
        /// A normal run: any non-additive difference with the target refuses the stage.
        case refuseNonAdditive
        /// Re-running an applied stage whose objects went missing on a database already past it:
        /// only create what is missing, leave later versions' objects alone.
        case addMissingOnly
    }

    /// Applies one step in its own transaction (keys off before `BEGIN`, checked before
    /// `COMMIT`), records it in the ledger, and returns the SQL it executed.
    @discardableResult
    func apply(_ step: MigrationStep, to db: Database, isFresh: Bool, mode: ReconcileMode) throws -> [String] {
        try withForeignKeysOff(db) {
            try db.runTransaction(begin: beginWaitingForWriteLock) { db in
                // Another process may have applied this step while we waited for the lock.
                if mode == .refuseNonAdditive, let done = try MigrationLedger.entries(db).last,
                    done.position >= step.position
                {
                    try verify(try MigrationLedger.entries(db))
                    return []
                }
                return try applyInsideTransaction(step, db: db, isFresh: isFresh, mode: mode)
            }
        }
    }

    func applyInsideTransaction(_ step: MigrationStep, db: Database, isFresh: Bool, mode: ReconcileMode) throws
        -> [String]
    {
        let clock = ContinuousClock()
        let started = clock.now
        options.progress?(.stageStarted(stage: step.label))
        try MigrationLedger.createIfNeeded(db)
        let context = MigrationContext(
            database: db, step: step, isFreshDatabase: isFresh, progress: options.progress, bookkeeping: bookkeeping)
        let notedBefore = try bookkeeping?.notedRows(db)
        try runStageCode(step.stage?.willMigrate, context: context, step: step)
        try reconcile(context, to: step, mode: mode)
        context.phase = .didMigrate
        try runStageCode(step.stage?.didMigrate, context: context, step: step)
        try bookkeeping?.forgetRowsNoted(db, since: notedBefore)
        if mode == .refuseNonAdditive {
            // Stage code can change the schema too; what is recorded as this version must be it.
            let left = relevantDifferences(live: try SchemaSnapshot(liveDatabase: db), target: step.target)
            guard left.isEmpty else {
                throw MigrationError(
                    .schemaMismatchAfterStage, stage: step.label,
                    "after the stage the database differs from the declared schema \(step.toVersion)",
                    fix: "declare in \(step.toVersion) everything the stage creates, and create nothing else; the "
                        + "stage was rolled back",
                    differences: left)
            }
        }
        try Self.checkForeignKeys(db, stageLabel: step.label, skipping: try context.tableStillCheckedForForeignKeys())
        let duration = started.duration(to: clock.now)
        try MigrationLedger.record(step, duration: duration.seconds, adopted: false, in: db)
        try MigrationLedger.markSchemaVerified(db, steps: steps)
        options.progress?(.stageFinished(stage: step.label, duration: duration))
        return context.executedSQL
    }

    private func runStageCode(_ body: MigrationStage.Body?, context: MigrationContext, step: MigrationStep) throws {
        guard let body else { return }
        do {
            // Every peer runs the same stage: its writes are not user edits to sync, unless the
            // stage asks (then they are noted and recorded once the log opens, on any connection).
            try context.database.withoutRecordingChanges { db in
                guard context.recordsChanges else { return try body(context) }
                // TEMP triggers made in the stage's transaction go with it if the code throws.
                try StageChangeNotes.installTriggers(
                    on: db, syncedTablesOf: context.targetSchema, bookkeeping: try context.changeLogBookkeeping())
                try body(context)
                try StageChangeNotes.removeTriggers(from: db)
            }
        } catch var error as MigrationError {
            if error.stage == nil { error.stage = step.label }
            throw error
        } catch let error as DatabaseError {
            throw MigrationError(
                .stageFailed, stage: step.label, "\(context.phase.rawValue) failed: \(error)",
                fix: "the stage was rolled back; fix the stage code (it must work on a fresh, a previous-version "
                    + "and an already-migrated database)", databaseError: error)
        } catch {
            throw MigrationError(
                .stageFailed, stage: step.label, "\(context.phase.rawValue) failed: \(error)",
                fix: "the stage was rolled back; fix the stage code")
        }
    }

    /// Creates the tables, columns and indexes the target declares and the database lacks.
    func reconcile(_ context: MigrationContext, to step: MigrationStep, mode: ReconcileMode) throws {
        let differences = relevantDifferences(
            live: try SchemaSnapshot(liveDatabase: context.database), target: step.target)
        switch mode {
        case .refuseNonAdditive:
            let refused = differences.filter { !$0.isAdditive }
            guard refused.isEmpty else {
                throw MigrationError(
                    .nonAdditiveChange, stage: step.label,
                    "the database cannot reach schema \(step.toVersion) by adding tables, columns and indexes",
                    differences: refused)
            }
        case .addMissingOnly:
            break
        }
        for difference in differences where difference.isAdditive {
            guard let table = step.target.table(named: difference.table) else { continue }
            switch difference.kind {
            case .missingTable:
                try context.run(SQL(sql: table.createTableSQL()))
                for index in table.indexes { try context.run(SQL(sql: table.createIndexSQL(index))) }
            case .missingColumn:
                if let column = table.columns.first(where: { $0.name.lowercased() == difference.column?.lowercased() })
                {
                    try context.run(SQL(sql: table.addColumnSQL(column)))
                }
            case .missingIndex:
                if let index = table.indexes.first(where: { $0.name.lowercased() == difference.index?.lowercased() }) {
                    try context.run(SQL(sql: table.createIndexSQL(index)))
                }
            default:
                break
            }
        }
    }

    /// `PRAGMA foreign_key_check` over the whole database (or one table's foreign keys); any
    /// violation aborts the stage with the offending rows. `skipping` leaves out a table whose
    /// check still holds (see ``MigrationContext/tableStillCheckedForForeignKeys()``): the other
    /// tables of `main` are checked one by one, which is what the whole-database pragma does.
    /// See <https://www.sqlite.org/pragma.html#pragma_foreign_key_check>.
    static func checkForeignKeys(_ db: Database, stageLabel: String, table: String? = nil, skipping: String? = nil)
        throws
    {
        let sql: SQL
        if let table {
            sql = "SELECT * FROM pragma_foreign_key_check(\(table))"
        } else if let skipping {
            sql = """
                SELECT violation.*
                FROM main.sqlite_schema AS object, pragma_foreign_key_check(object.name, 'main') AS violation
                WHERE object.type = 'table' AND object.name <> \(skipping) COLLATE NOCASE
                """
        } else {
            sql = "PRAGMA foreign_key_check"
        }
        let violations = try db.fetchAll(sql)
        guard !violations.isEmpty else { return }
        let rows = try violations.prefix(20).map { row in
            "\(try row.decode(String.self, at: 0)) rowid \(try row.decode(Int64?.self, at: 1).map(String.init) ?? "-") "
                + "references a missing row of \(try row.decode(String.self, at: 2))"
        }
        throw MigrationError(
            .foreignKeyViolation, stage: stageLabel,
            "\(violations.count) row(s) violate foreign keys\(table.map { " of \($0)" } ?? "") before the stage commits",
            fix: "copy with a LEFT JOIN that maps orphans to an existing parent (or NULL), or delete or repair "
                + "them in the stage; the stage was rolled back",
            details: rows)
    }

    /// SQLite ignores `PRAGMA foreign_keys` inside a transaction, so it is turned off before
    /// `BEGIN` and restored after `COMMIT`. See <https://www.sqlite.org/foreignkeys.html#fk_enable>.
    func withForeignKeysOff<Result>(_ db: Database, _ body: () throws -> Result) throws -> Result {
        let wereOn = try db.fetchValue(Bool.self, "PRAGMA foreign_keys") ?? false
        if wereOn { try db.execute(sql: "PRAGMA foreign_keys = OFF") }
        defer { if wereOn { try? db.execute(sql: "PRAGMA foreign_keys = ON") } }
        return try body()
    }

    /// `BEGIN IMMEDIATE`, retried while another connection (another process migrating) holds the
    /// write lock, up to ``Options/lockTimeout``.
    func beginWaitingForWriteLock(_ db: Database) throws {
        let deadline = ContinuousClock.now.advanced(by: options.lockTimeout)
        while true {
            do {
                try db.execute(sql: "BEGIN IMMEDIATE TRANSACTION")
                return
            } catch {
                // A typed `catch … where` here crashes the Swift 6.3.1 compiler (SILGen ownership).
                let waiting: Bool = error.primaryResultCode == .busy && ContinuousClock.now < deadline
                if !waiting { throw error }
                Thread.sleep(forTimeInterval: 0.02)
            }
        }
    }
}

extension Duration {
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
