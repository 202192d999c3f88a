import Foundation
import OfflineStore

/// The whole migration test checklist for a ``MigrationPlan`` in one call.
///
/// It builds real databases in a temporary directory it removes afterwards, fills them with rows
/// that honour every declared constraint (or with the rows `seed` inserts), and checks every
/// path a user's database can take to the latest version:
///
/// - a fresh install, checked against the declared latest schema;
/// - an upgrade from every declared version, with data: no row lost, `integrity_check` ok,
///   `foreign_key_check` empty, the schema equal to a fresh install's, the ledger complete;
/// - every one of those migrated a second time: nothing changes (schema, ledger, rows);
/// - every stage run again on a database it already migrated (its ledger entry removed);
/// - half-migrated databases: at each version with one object of the next version already
///   present (a table, a column, an index), and with all of them;
/// - partial states at each version: each table dropped (with the rows that pointed at it), each
///   column ADD COLUMN can restore dropped, each index dropped, the ledger wiped (it must be
///   adopted, and no custom stage after that version skipped); and the file deleted.
///
/// Every problem names its scenario, the version the database was at, the table and column, and
/// what differed; see ``Problem`` and ``Report``. Rows are generated deterministically from
/// `randomSeed`, so a report can be reproduced.
///
/// Errors thrown by the plan's stages are caught and reported as problems, so one call reports
/// everything; ``verify()`` itself only throws when it cannot create its temporary directory.
///
/// ```swift
/// @Test func remindersPlanIsSafe() throws {
///     let report = try MigrationPlanVerifier(plan: RemindersMigrationPlan.self).verify()
///     #expect(report.problems.isEmpty, "\(report)")
/// }
/// ```
///
/// It depends on no test framework: use it from Swift Testing, XCTest or a command-line tool.
public struct MigrationPlanVerifier {
    /// Inserts the rows of a database at the given version, in place of generated rows. It runs in
    /// one transaction on a connection with foreign keys on, right after the database was
    /// migrated to that version.
    public typealias Seed = (Database, Schema.Version) throws -> Void

    public let plan: any MigrationPlan.Type
    /// How many rows the generator inserts into each table (ignored when `seed` is set).
    public var rowsPerTable: Int
    /// The seed of the generator's pseudo-random numbers: the same seed makes the same rows, so a
    /// report can be reproduced.
    public var randomSeed: UInt64
    /// The rows to verify with, replacing generation.
    public var seed: Seed?

    /// A verifier for `plan`; nothing runs until ``verify()``.
    ///
    /// ```swift
    /// let verifier = MigrationPlanVerifier(plan: RemindersMigrationPlan.self, rowsPerTable: 5)
    /// let seeded = MigrationPlanVerifier(plan: RemindersMigrationPlan.self) { db, version in
    ///     try db.execute("INSERT INTO remindersLists (id, name) VALUES (\("L1"), \("Home"))")
    /// }
    /// ```
    public init(plan: any MigrationPlan.Type, rowsPerTable: Int = 20, randomSeed: UInt64 = 1, seed: Seed? = nil) {
        self.plan = plan
        self.rowsPerTable = max(0, rowsPerTable)
        self.randomSeed = randomSeed
        self.seed = seed
    }

    /// Runs every scenario and returns what went wrong in each.
    ///
    /// ```swift
    /// let report = try MigrationPlanVerifier(plan: RemindersMigrationPlan.self).verify()
    /// print(report)  // "… 34 scenarios, no problems"
    /// ```
    public func verify() throws -> Report {
        let clock = ContinuousClock()
        let started = clock.now
        let directory = try ScratchDirectory()
        let run = VerificationRun(verifier: self, directory: directory)
        run.runAllScenarios()
        return Report(
            planName: String(describing: plan), problems: run.problems, scenarios: run.scenarios,
            duration: started.duration(to: clock.now))
    }
}
