import OfflineStoreSQLite

/// An app's whole schema history: every released schema version, and the stages between them.
///
/// Stages are append-only: once a version ships, its schema and its stage never change (the
/// migrator stores a checksum of each and refuses a database whose record no longer matches).
/// The first schema is installed by an implicit creation step; stage *n* goes from
/// `schemas[n]` to `schemas[n + 1]`.
///
/// ```swift
/// enum RemindersPlan: MigrationPlan {
///     static let schemas: [any VersionedSchema.Type] = [RemindersV1.self, RemindersV1_1.self]
///     static let stages: [MigrationStage] = [.lightweight(fromVersion: RemindersV1.self, toVersion: RemindersV1_1.self)]
/// }
/// let db = try Database(path: path)
/// try Migrator(plan: RemindersPlan.self).migrate(db)
/// ```
public protocol MigrationPlan {
    static var schemas: [any VersionedSchema.Type] { get }
    static var stages: [MigrationStage] { get }
    /// The app's record types declared by their models (``ModelRecord``), whose coding keys the
    /// migrator checks against the latest schema's tables when it is made; none by default.
    static var records: [any ModelRecord.Type] { get }
}
