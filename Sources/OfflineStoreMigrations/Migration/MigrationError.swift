import OfflineStoreSQLite

/// Why a migration plan was refused or a migration stopped. Nothing was modified unless the
/// message says otherwise: every stage runs in its own transaction and rolls back on error.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The plan itself is wrong (versions, chain, non-additive lightweight stage); found before
        /// the database is touched.
        case invalidPlan
        /// A lightweight reconcile met a difference it cannot make by adding.
        case nonAdditiveChange
        /// A shipped stage changed: its recorded checksum differs from the plan's.
        case checksumMismatch
        /// The ledger's stages do not line up with the plan's (a stage removed or reordered).
        case stageRemovedOrReordered
        /// The database holds stages this plan does not know: a newer app wrote it.
        case databaseNewerThanPlan
        /// The database has tables but no ledger, and matches no declared version exactly.
        case unrecognizedSchema
        /// A statement a stage executes broke a NEVER lint rule the stage did not acknowledge.
        case lintViolation
        /// Foreign keys are violated at the end of a stage or after a table rebuild.
        case foreignKeyViolation
        /// Stage code left the schema different from the version it declares.
        case schemaMismatchAfterStage
        /// A table rebuild would lose or duplicate rows.
        case rowCountMismatch
        /// Stage code, or SQL the migrator ran for it, failed.
        case stageFailed
        /// The migrator was called where it cannot run (inside a transaction, read-only).
        case misuse
    }

    public var kind: Kind
    /// The stage concerned, as `1.0.0 → 1.1.0 (lightweight)`.
    public var stage: String?
    public var message: String
    /// What to do next.
    public var fix: String?
    /// Per-object details: schema differences, lint findings, offending rows.
    public var details: [String]
    public var differences: [SchemaDifference]
    /// The database error underneath, if any.
    public var databaseError: DatabaseError?

    public init(
        _ kind: Kind, stage: String? = nil, _ message: String, fix: String? = nil, details: [String] = [],
        differences: [SchemaDifference] = [], databaseError: DatabaseError? = nil
    ) {
        self.kind = kind
        self.stage = stage
        self.message = message
        self.fix = fix
        self.details = details
        self.differences = differences
        self.databaseError = databaseError
    }

    public var description: String {
        var text = "migration error"
        if let stage { text += " in stage \(stage)" }
        text += ": \(message)"
        for detail in details { text += "\n  - \(detail)" }
        for difference in differences { text += "\n  - \(difference)" }
        if let fix { text += "\nFix: \(fix)" }
        return text
    }
}
