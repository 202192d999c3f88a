/// One step of a ``MigrationPlan`` from one schema version to the next.
///
/// Every stage is both create and upgrade: it runs on a database at the previous version, on an
/// empty (purged) database, and on one where it already ran or half-ran, and ends at the same
/// schema. It runs in one transaction with foreign keys checked before commit.
public struct MigrationStage: Sendable {
    public enum Kind: String, Sendable {
        case lightweight
        case custom
    }

    /// Stage code: runs inside the stage's transaction with the migration context.
    public typealias Body = @Sendable (MigrationContext) throws -> Void

    public let kind: Kind
    public let fromSchema: any VersionedSchema.Type
    public let toSchema: any VersionedSchema.Type
    let willMigrate: Body?
    let didMigrate: Body?
    /// Lint rules (by id) this stage knowingly breaks; any other NEVER finding fails the stage.
    public let acknowledgedLintRules: Set<String>
    /// Whether the stage's writes are recorded as user changes for sync (off: every peer runs the
    /// same stage, so its backfills must not be pushed). When on, each row the stage's code inserts
    /// or deletes and each column it updates in a synced table is noted while it runs, and recorded
    /// when the change log opens right after migrating (``ChangeLog/open(_:migrator:)``), under a clock
    /// newer than any the device has seen, whichever connection migrated. A table rebuild's copy is
    /// not a change and is not recorded, nor are the columns its `values` fill. To record only some
    /// rows, leave it off and call ``MigrationContext/recordChanges(in:columns:where:)``.
    public let recordsChanges: Bool

    public var fromVersion: Schema.Version { fromSchema.versionIdentifier }
    public var toVersion: Schema.Version { toSchema.versionIdentifier }

    /// Brings the database to `toVersion` additively: creates missing tables (with all their
    /// constraints), columns, indexes and FTS tables. Any non-additive difference is refused
    /// before anything runs, naming the table and column and the fix.
    public static func lightweight(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type
    ) -> MigrationStage {
        MigrationStage(
            kind: .lightweight, fromSchema: fromVersion, toSchema: toVersion, willMigrate: nil, didMigrate: nil,
            acknowledgedLintRules: [], recordsChanges: false)
    }

    /// Runs `willMigrate` against the old schema, then the additive reconcile to `toVersion`,
    /// then `didMigrate` against the new schema.
    ///
    /// ```swift
    /// .custom(fromVersion: V1_1.self, toVersion: V2.self,
    ///     willMigrate: { context in try context.rebuildTable(Reminder.self) },
    ///     didMigrate: { context in
    ///         try context.execute("UPDATE reminders SET dueAt = unixepoch(dueDate) WHERE dueAt IS NULL AND dueDate IS NOT NULL")
    ///     })
    /// ```
    public static func custom(
        fromVersion: any VersionedSchema.Type, toVersion: any VersionedSchema.Type,
        acknowledgingLintRules acknowledged: Set<String> = [], recordsChanges: Bool = false,
        willMigrate: Body? = nil, didMigrate: Body? = nil
    ) -> MigrationStage {
        MigrationStage(
            kind: .custom, fromSchema: fromVersion, toSchema: toVersion, willMigrate: willMigrate,
            didMigrate: didMigrate, acknowledgedLintRules: acknowledged, recordsChanges: recordsChanges)
    }
}
