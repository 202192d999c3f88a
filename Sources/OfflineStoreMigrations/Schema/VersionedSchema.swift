/// One released version of an app's schema: a full snapshot of its tables, not a diff.
///
/// Once a version ships, its declaration never changes: the migrator records a checksum of
/// it and refuses to open a database whose recorded checksum no longer matches.
///
/// ```swift
/// enum RemindersV1: VersionedSchema {
///     static let versionIdentifier: Schema.Version = "1.0.0"
///     static let models: [any Model.Type] = [ReminderList.self, Reminder.self]
/// }
/// ```
public protocol VersionedSchema: SendableMetatype {
    static var versionIdentifier: Schema.Version { get }
    static var models: [any Model.Type] { get }
}

extension VersionedSchema {
    /// The tables of this version, validated and normalised.
    public static func snapshot() throws(SchemaError) -> SchemaSnapshot {
        try SchemaSnapshot(
            version: versionIdentifier, tables: models.map { $0.tableDefinition },
            allowingReservedNames: self is any LibrarySchema.Type)
    }
}

/// The library's own schemas (the metadatabase's), which may use the reserved `ostore_` prefix.
package protocol LibrarySchema: VersionedSchema {}

/// A type that declares one table (or FTS5 virtual table) of a schema version.
///
/// ```swift
/// enum ReminderList: Model {
///     static let tableDefinition = TableDefinition("remindersLists", options: [.strict]) {
///         Column("id", .text).primaryKey()
///         Column("name", .text).notNull().unique()
///     }
/// }
/// ```
public protocol Model: SendableMetatype {
    static var tableDefinition: TableDefinition { get }
}
