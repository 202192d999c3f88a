import OfflineStore

extension MigrationPlanVerifier {
    /// One thing the verifier found wrong, named precisely: the scenario, the version the database
    /// was at, the table and column, and what differed.
    ///
    /// ```swift
    /// let lost = report.problems.filter { $0.kind == .rowsLost && $0.table == "reminders" }
    /// for problem in lost { print(problem.scenario, problem.message, problem.details) }
    /// ```
    public struct Problem: Sendable, Hashable, CustomStringConvertible {
        public enum Kind: String, Sendable, Hashable, CaseIterable {
            /// The migrator refused the plan itself (versions, chain, a non-additive lightweight stage).
            case invalidPlan
            /// Migrating threw: a stage's code failed, or the migrator refused the database.
            case migrationFailed
            /// Rows present before migrating are gone after it (by primary key, or rowid).
            case rowsLost
            /// `PRAGMA integrity_check` did not answer `ok`.
            case integrityCheckFailed
            /// `PRAGMA foreign_key_check` found rows whose parent is missing, or the migrator
            /// refused to commit a stage for that reason.
            case foreignKeyViolation
            /// The migrated schema is not the one a fresh install of the same plan produces.
            case schemaDiffersFromFreshInstall
            /// The migrated schema is not the plan's declared latest schema. A difference already
            /// reported as ``schemaDiffersFromFreshInstall``, or by the fresh install itself, is not
            /// repeated.
            case schemaDiffersFromDeclaration
            /// After migrating, the ledger does not record every stage of the plan.
            case incompleteLedger
            /// A custom stage was recorded as applied without running: the ledger-less database was
            /// adopted as a later version than it was at, so the stage's data changes never happened.
            case stageSkipped
            /// Migrating an up-to-date database again changed its schema, ledger or rows.
            case changedWhenMigratedAgain
            /// The `seed` closure threw.
            case seedFailed
            /// The generator could not insert every row it wanted into a table (give a `seed`).
            case dataGenerationIncomplete
            /// The verifier could not put the database into the scenario's starting state.
            case scenarioSetupFailed
        }

        public var kind: Kind
        /// The scenario, such as `upgrade from 1.0.0` or `table reminders dropped at 2.0.0`.
        public var scenario: String
        /// The schema version the database was at when the scenario started (nil for a fresh
        /// install and for the plan itself).
        public var version: Schema.Version?
        /// The table that lost rows, differs or has orphans; for a failed migration, the table a
        /// schema difference names, else the table the scenario damaged (dropped, half-created).
        public var table: String?
        /// The column a schema difference names.
        public var column: String?
        /// What differed, in one sentence.
        public var message: String
        /// Sample keys, schema differences, offending rows, error details.
        public var details: [String]

        /// A problem; the verifier makes these, tests of reports may too.
        public init(
            kind: Kind, scenario: String, version: Schema.Version? = nil, table: String? = nil, column: String? = nil,
            message: String, details: [String] = []
        ) {
            self.kind = kind
            self.scenario = scenario
            self.version = version
            self.table = table
            self.column = column
            self.message = message
            self.details = details
        }

        public var description: String {
            var subject = ""
            if let table { subject = " in \(table)" + (column.map { ".\($0)" } ?? "") }
            var text = "[\(scenario)] \(kind.rawValue)\(subject): \(message)"
            for detail in details { text += "\n    - " + detail.replacingOccurrences(of: "\n", with: "\n      ") }
            return text
        }
    }
}
