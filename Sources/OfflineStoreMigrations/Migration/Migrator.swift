import Foundation
import OfflineStoreSQLite

/// Applies a ``MigrationPlan`` to a database: validates the plan before touching anything,
/// checks the ledger of applied stages against it (immutability), reconciles the ledger with
/// what the file really holds, and runs each pending stage in its own transaction.
///
/// ```swift
/// let migrator = try Migrator(plan: RemindersPlan.self)
/// let db = try Database(path: path)
/// try migrator.migrate(db)
/// #expect(try migrator.hasCompletedMigrations(db))
/// ```
///
/// Two processes opening the same file at once are safe: each stage takes the write lock
/// (`BEGIN IMMEDIATE`), re-reads the ledger, and skips a stage the other process finished.
/// See <https://www.sqlite.org/lang_transaction.html> and <https://www.sqlite.org/foreignkeys.html>.
public struct Migrator: Sendable {
    public struct Options: Sendable {
        /// Development only: when the declared schema no longer matches what the ledger recorded,
        /// erase the database and recreate it instead of refusing. Off by default; loud when on.
        public var eraseDatabaseOnSchemaChange = false
        /// How long a stage waits for another process's migration to release the write lock.
        public var lockTimeout: Duration = .seconds(600)
        /// Receives stage starts and ends and row progress of rebuilds and batched backfills.
        public var progress: (@Sendable (MigrationProgress) -> Void)?

        public init() {}
    }

    public let options: Options
    let steps: [MigrationStep]
    /// Every table any version of the plan declares (lowercased): the tables the migrator owns.
    let planTableKeys: Set<String>
    /// The change log's bookkeeping in the user's file (``ChangeLogBookkeeping``); nil for a
    /// migrator of files no change log opens.
    let bookkeeping: (any ChangeLogBookkeeping.Type)?

    /// The versions of the plan, oldest first.
    public var versions: [Schema.Version] { steps.map(\.toVersion) }
    public var latestVersion: Schema.Version { steps[steps.count - 1].toVersion }

    /// Validates `plan`; nothing touches a database. `releasedUpTo` simulates an older app release
    /// that only knew the plan up to that version. Apps call `init(plan:releasedUpTo:options:)`,
    /// which the change log declares, to give the migrator its `bookkeeping`.
    package init(
        plan: any MigrationPlan.Type, releasedUpTo: Schema.Version? = nil, options: Options = Options(),
        bookkeeping: (any ChangeLogBookkeeping.Type)?
    ) throws(MigrationError) {
        self.options = options
        self.bookkeeping = bookkeeping
        var schemas = plan.schemas
        var stages = plan.stages
        if let releasedUpTo {
            guard let last = schemas.firstIndex(where: { $0.versionIdentifier == releasedUpTo }) else {
                throw MigrationError(
                    .invalidPlan, "the plan declares no schema version \(releasedUpTo)",
                    fix: "use one of \(schemas.map { $0.versionIdentifier.description }.joined(separator: ", "))")
            }
            schemas = Array(schemas[...last])
            stages = Array(stages.prefix(last))
        }
        steps = try Self.validatedSteps(schemas: schemas, stages: stages)
        planTableKeys = Set(steps.flatMap { $0.target.tables.map { $0.name.lowercased() } })
        // The records are the app's current code: an older release, simulated, had its own.
        if releasedUpTo == nil {
            for record in plan.records {
                if let (message, fix) = record.problem(against: steps[steps.count - 1].target) {
                    throw MigrationError(.invalidPlan, message, fix: fix)
                }
            }
        }
    }

    private static func validatedSteps(
        schemas: [any VersionedSchema.Type], stages: [MigrationStage]
    ) throws(MigrationError) -> [MigrationStep] {
        guard !schemas.isEmpty else {
            throw MigrationError(
                .invalidPlan, "the plan declares no schema", fix: "list every released version in `schemas`")
        }
        var snapshots: [SchemaSnapshot] = []
        for schema in schemas {
            do {
                snapshots.append(try schema.snapshot())
            } catch {
                throw MigrationError(
                    .invalidPlan, "schema \(schema.versionIdentifier) (\(schema)) is invalid: \(error.message)",
                    fix: "correct the declaration of \(error.table ?? "the table") in \(schema)")
            }
        }
        for (earlier, later) in zip(schemas, schemas.dropFirst())
        where earlier.versionIdentifier >= later.versionIdentifier {
            let problem = earlier.versionIdentifier == later.versionIdentifier ? "twice" : "out of order"
            throw MigrationError(
                .invalidPlan,
                "schema version \(later.versionIdentifier) is listed \(problem) (after \(earlier.versionIdentifier))",
                fix: "list each version once, oldest first; versions only grow")
        }
        guard stages.count == schemas.count - 1 else {
            let covered = stages.count + 1
            let problem =
                stages.count < schemas.count - 1
                ? "no stage leads to \(schemas[covered].versionIdentifier)"
                : "there are \(stages.count) stages for \(schemas.count) schemas"
            throw MigrationError(
                .invalidPlan, "the stages do not chain the schemas: \(problem)",
                fix: "declare exactly one stage from each version to the next, in order")
        }
        var steps = [
            MigrationStep(
                position: 0, kind: .create, fromVersion: nil, toVersion: schemas[0].versionIdentifier, stage: nil,
                target: snapshots[0])
        ]
        for (index, stage) in stages.enumerated() {
            let expectedFrom = schemas[index]
            let expectedTo = schemas[index + 1]
            guard ObjectIdentifier(stage.fromSchema) == ObjectIdentifier(expectedFrom),
                ObjectIdentifier(stage.toSchema) == ObjectIdentifier(expectedTo)
            else {
                throw MigrationError(
                    .invalidPlan,
                    "stage \(index + 1) goes \(stage.fromVersion) → \(stage.toVersion), but the plan's schemas "
                        + "need \(expectedFrom.versionIdentifier) → \(expectedTo.versionIdentifier) there",
                    fix: "stages must chain the listed schemas without gaps, each referencing schema types in "
                        + "`schemas`; never remove or reorder a shipped stage")
            }
            let step = MigrationStep(
                position: index + 1, kind: stage.kind == .lightweight ? .lightweight : .custom,
                fromVersion: stage.fromVersion, toVersion: stage.toVersion, stage: stage, target: snapshots[index + 1])
            if stage.kind == .lightweight {
                let refused = SchemaSnapshot(liveTables: snapshots[index].tables)
                    .differences(toReach: snapshots[index + 1]).filter { !$0.isAdditive }
                if !refused.isEmpty {
                    throw MigrationError(
                        .nonAdditiveChange, stage: step.label,
                        "a lightweight stage can only add tables, columns and indexes", differences: refused)
                }
            }
            steps.append(step)
        }
        return steps
    }

    /// Brings `db` to the latest version (or `target`), running every pending stage in its own
    /// transaction. Opening an up-to-date database costs a ledger read and a schema-cookie check.
    public func migrate(_ db: Database, upTo target: Schema.Version? = nil) throws(MigrationError) {
        let last = try position(of: target)
        if options.eraseDatabaseOnSchemaChange {
            FileHandle.standardError.write(
                Data(
                    ("OfflineStore: development mode is ON (Migrator.Options.eraseDatabaseOnSchemaChange): a changed "
                        + "schema ERASES \(db.path). Never ship it.\n").utf8))
        }
        try wrapErrors(stage: nil) {
            try checkUsable(db)
            let entries = try ledgerEntries(db)
            if let lastEntry = entries.last, lastEntry.position >= last,
                try MigrationLedger.verifiedSchemaCookie(db) == MigrationLedger.schemaCookie(db)
            {
                return
            }
            let start = try reconcileLedgerWithDatabase(db, entries: entries, upTo: last)
            guard start.position <= last else { return }
            for step in steps[start.position...last] {
                _ = try apply(step, to: db, isFresh: start.isFresh, mode: .refuseNonAdditive)
            }
        }
    }

    func position(of version: Schema.Version?) throws(MigrationError) -> Int {
        guard let version else { return steps.count - 1 }
        guard let step = steps.first(where: { $0.toVersion == version }) else {
            throw MigrationError(
                .invalidPlan, "the plan has no schema version \(version)",
                fix: "use one of \(versions.map(\.description).joined(separator: ", "))")
        }
        return step.position
    }

    func checkUsable(_ db: Database) throws {
        guard !db.isInsideTransaction else {
            throw MigrationError(
                .misuse, "the migrator runs each stage in its own transaction and cannot run inside one",
                fix: "call migrate before beginning a transaction")
        }
    }

    /// Reads the ledger and checks it against the plan: changed checksums, removed or reordered
    /// stages and stages from a newer app all refuse (or, in development mode, erase).
    func ledgerEntries(_ db: Database) throws -> [MigrationLedger.Entry] {
        let entries = try MigrationLedger.entries(db)
        do {
            try verify(entries)
            return entries
        } catch {
            guard options.eraseDatabaseOnSchemaChange else { throw error }
            try eraseForDevelopment(db, because: error)
            return []
        }
    }

    func verify(_ entries: [MigrationLedger.Entry]) throws(MigrationError) {
        for (offset, entry) in entries.enumerated() {
            guard entry.position == offset else {
                throw MigrationError(
                    .stageRemovedOrReordered,
                    "the ledger has no record for position \(offset) but one for \(entry.position)",
                    fix: "the ledger was edited by hand; restore it from a backup or delete the database file")
            }
            guard entry.position < steps.count else {
                throw MigrationError(
                    .databaseNewerThanPlan, stage: "\(entry.fromVersion?.description ?? "create") → \(entry.toVersion)",
                    "the database is at schema \(entries.last!.toVersion), which this release does not know "
                        + "(it knows versions up to \(latestVersion)): a newer release of the app wrote it, or a "
                        + "shipped stage was removed from the plan",
                    fix: "open it with the newer release, or restore the removed stage (nothing was modified)")
            }
            let step = steps[entry.position]
            guard entry.fromVersion == step.fromVersion, entry.toVersion == step.toVersion else {
                throw MigrationError(
                    .stageRemovedOrReordered, stage: step.label,
                    "the database applied \(entry.fromVersion?.description ?? "create") → \(entry.toVersion) at "
                        + "position \(entry.position), but the plan has \(step.label) there",
                    fix: "shipped stages are append-only: restore the removed or reordered stage")
            }
            guard entry.checksum == step.checksum else {
                throw MigrationError(
                    .checksumMismatch, stage: step.label,
                    "the shipped stage changed since it ran on this database (recorded checksum \(entry.checksum), "
                        + "plan checksum \(step.checksum))",
                    fix: "never edit a released version's schema or stage; put the change in a new version with "
                        + "a new stage")
            }
        }
    }

    func wrapErrors(stage: String?, _ body: () throws -> Void) throws(MigrationError) {
        do {
            try body()
        } catch let error as MigrationError {
            throw error
        } catch let error as DatabaseError {
            throw MigrationError(
                .stageFailed, stage: stage, "\(error)", fix: "nothing was changed by the failed stage",
                databaseError: error)
        } catch {
            throw MigrationError(.stageFailed, stage: stage, "\(error)", fix: "nothing was changed by the failed stage")
        }
    }
}
