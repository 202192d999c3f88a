import OfflineStore
import RemindersModel

// The add-column half of the Reminders 1.0.0 → 1.1.0 stage on its own, so its cost can be told
// apart from the stage's CREATE INDEX (which reads every row). Both plans start at the
// Reminders plan's own 1.0.0 schema type, so their creation step has the same checksum and they
// migrate the very files the Reminders plan made.

/// 1.0.0 → 1.1.0 adding only the two columns Reminders 1.1.0 adds, as it declares them:
/// `priority` carries a CHECK, which SQLite (since 3.37) verifies against every existing row.
enum ReminderColumnsBenchPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [RemindersSchemaV1.self, ReminderColumnsSchema.self]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: RemindersSchemaV1.self, toVersion: ReminderColumnsSchema.self)
    ]

    enum ReminderColumnsSchema: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.1.0"
        static let models: [any Model.Type] = [RemindersSchemaV1.ReminderList.self, Reminder.self]

        enum Reminder: Model {
            static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
                Column("id", .text).primaryKey()
                Column("title", .text).notNull()
                Column("listID", .text).notNull()
                Column("dueDate", .text)
                Column("isDone", .integer).notNull().defaults(0)
                Column("priority", .integer).check("priority BETWEEN 0 AND 9")
                Column("notes", .text).notNull().defaults("")
            }
        }
    }
}

/// 1.0.0 → 1.1.0 adding a nullable column and a NOT NULL DEFAULT column, neither with a CHECK:
/// the pure lightweight add-column stage, a change to the schema record only.
enum PlainColumnsBenchPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [RemindersSchemaV1.self, PlainColumnsSchema.self]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: RemindersSchemaV1.self, toVersion: PlainColumnsSchema.self)
    ]

    enum PlainColumnsSchema: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.1.0"
        static let models: [any Model.Type] = [RemindersSchemaV1.ReminderList.self, Reminder.self]

        enum Reminder: Model {
            static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
                Column("id", .text).primaryKey()
                Column("title", .text).notNull()
                Column("listID", .text).notNull()
                Column("dueDate", .text)
                Column("isDone", .integer).notNull().defaults(0)
                Column("priority", .integer)
                Column("notes", .text).notNull().defaults("")
            }
        }
    }
}
