import Foundation
import OfflineStoreSQLite

extension Migrator {
    struct StartPoint {
        var position: Int
        var isFresh: Bool
    }

    /// Makes the ledger tell the truth before pending stages run: adopts a database made without
    /// a ledger when it matches a declared version exactly, and re-runs applied stages whose
    /// objects are gone (a partly purged file, an external DROP).
    func reconcileLedgerWithDatabase(_ db: Database, entries: [MigrationLedger.Entry], upTo last: Int) throws
        -> StartPoint
    {
        let live = try SchemaSnapshot(liveDatabase: db)
        let ownedTables = live.tables.filter { planTableKeys.contains($0.name.lowercased()) }
        let isFresh = ownedTables.isEmpty
        guard let lastEntry = entries.last else {
            if isFresh { return StartPoint(position: 0, isFresh: true) }
            let adopted = try adopt(db, live: live)
            return StartPoint(position: adopted + 1, isFresh: false)
        }
        let current = steps[lastEntry.position]
        let differences = relevantDifferences(live: live, target: current.target)
        // Re-running stages only adds what ADD COLUMN can add: without this check a lost NOT NULL
        // (no DEFAULT), PRIMARY KEY or UNIQUE column was skipped and the database accepted without it.
        let lost = differences.filter { $0.kind == .missingColumn && !$0.isAdditive }
        guard lost.isEmpty else {
            let names = lost.map { "\($0.table).\($0.column ?? "?")" }.joined(separator: ", ")
            throw MigrationError(
                .nonAdditiveChange, stage: current.label,
                "the database is at \(current.toVersion) but lost \(names), which cannot be added back to "
                    + "existing rows",
                fix: "nothing was modified. Restore the file from a backup, or delete it to start over; if another "
                    + "tool dropped the column, add it back with its declared definition and a value for every row",
                differences: lost)
        }
        let missing = differences.filter(\.isAdditive)
        if let rerunFrom = firstStepDeclaring(missing, upTo: lastEntry.position) {
            for step in steps[rerunFrom...lastEntry.position] {
                _ = try withForeignKeysOff(db) {
                    try db.runTransaction(begin: beginWaitingForWriteLock) { db in
                        try applyInsideTransaction(step, db: db, isFresh: isFresh, mode: .addMissingOnly)
                    }
                }
            }
        } else {
            try db.runTransaction(begin: beginWaitingForWriteLock) { db in
                try MigrationLedger.createIfNeeded(db)
                try MigrationLedger.markSchemaVerified(db, steps: steps)
            }
        }
        return StartPoint(position: lastEntry.position + 1, isFresh: isFresh)
    }

    /// The differences the migrator answers for: tables the plan never declared belong to the
    /// app, not the migrator.
    func relevantDifferences(live: SchemaSnapshot, target: SchemaSnapshot) -> [SchemaDifference] {
        live.differences(toReach: target).filter {
            $0.kind != .unexpectedTable || planTableKeys.contains($0.table.lowercased())
        }
    }

    /// The earliest step (at or before `last`) whose schema declares one of the missing objects.
    private func firstStepDeclaring(_ missing: [SchemaDifference], upTo last: Int) -> Int? {
        guard !missing.isEmpty else { return nil }
        for step in steps[...last] {
            for difference in missing {
                guard let table = step.target.table(named: difference.table) else { continue }
                switch difference.kind {
                case .missingTable: return step.position
                case .missingColumn
                where table.columns.contains { $0.name.lowercased() == difference.column?.lowercased() }:
                    return step.position
                case .missingIndex
                where table.indexes.contains { $0.name.lowercased() == difference.index?.lowercased() }:
                    return step.position
                default: continue
                }
            }
        }
        return last
    }

    /// A database with the plan's tables but no ledger (made by an older tool, or its ledger was
    /// wiped) is adopted only when it matches a declared version exactly. Returns that step.
    ///
    /// When consecutive versions declare the same tables (the stage between them only changes
    /// data), the database matches them all and the oldest is adopted: the later stages then run,
    /// which is safe because every stage is idempotent, whereas adopting the newest would record
    /// their data changes as done without running them.
    private func adopt(_ db: Database, live: SchemaSnapshot) throws -> Int {
        var closest: (step: MigrationStep, differences: [SchemaDifference])?
        for step in steps {
            let differences = relevantDifferences(live: live, target: step.target)
            if differences.isEmpty {
                try db.runTransaction(begin: beginWaitingForWriteLock) { db in
                    // Another process may have adopted it while we waited.
                    guard try MigrationLedger.entries(db).isEmpty else { return }
                    try MigrationLedger.createIfNeeded(db)
                    for adoptedStep in steps[...step.position] {
                        try MigrationLedger.record(adoptedStep, duration: 0, adopted: true, in: db)
                    }
                    try MigrationLedger.markSchemaVerified(db, steps: steps)
                }
                return step.position
            }
            // On a tie the newer version is the closer guess.
            if closest == nil || differences.count <= closest!.differences.count { closest = (step, differences) }
        }
        throw MigrationError(
            .unrecognizedSchema,
            "the database has tables of this app but no migration ledger, and matches no declared version exactly; "
                + "closest is \(closest!.step.toVersion)",
            fix: "nothing was modified. If another tool made this database, bring it to exactly one declared "
                + "version (or declare the version it is at), then open it again",
            differences: closest!.differences)
    }

    /// Development mode: drops every table, view, trigger and index of the main database.
    func eraseForDevelopment(_ db: Database, because reason: MigrationError) throws {
        let warning =
            "OfflineStore DEVELOPMENT MODE (eraseDatabaseOnSchemaChange): ERASING the database because "
            + "\(reason.message)\n"
        FileHandle.standardError.write(Data(warning.utf8))
        try withForeignKeysOff(db) {
            try db.runTransaction(begin: beginWaitingForWriteLock) { db in
                let objects = try db.fetchAll(
                    """
                    SELECT type, name FROM main.sqlite_schema
                    WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND type IN ('view', 'trigger', 'table')
                    """)
                for object in objects {
                    let type: String = try object.decode(at: 0)
                    let name: String = try object.decode(at: 1)
                    // Dropping a virtual table drops its shadow tables.
                    guard
                        try db.fetchValue(Bool.self, "SELECT count(*) > 0 FROM main.sqlite_schema WHERE name = \(name)")
                            ?? false
                    else { continue }
                    try db.execute(sql: "DROP \(type.uppercased()) IF EXISTS \(quoteIdentifier(name))")
                }
            }
        }
    }
}
