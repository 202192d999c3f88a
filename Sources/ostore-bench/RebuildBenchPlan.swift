import OfflineStore
import RemindersModel

/// The Reminders plan up to 1.1.0, then a stage that only rebuilds `reminders` to add the
/// foreign key on `listID` (what Reminders 2.0.0 does, without its backfills and search table):
/// the table rebuild alone, comparable statement for statement with the C reference.
enum RebuildBenchPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [
        RemindersSchemaV1.self, RemindersSchemaV1_1.self, ForeignKeySchema.self,
    ]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: RemindersSchemaV1.self, toVersion: RemindersSchemaV1_1.self),
        .custom(
            fromVersion: RemindersSchemaV1_1.self, toVersion: ForeignKeySchema.self,
            willMigrate: { context in try context.rebuildTable(ForeignKeySchema.Reminder.self) }),
    ]

    enum ForeignKeySchema: VersionedSchema {
        static let versionIdentifier: Schema.Version = "2.0.0"
        static let models: [any Model.Type] = [
            RemindersSchemaV1.ReminderList.self, Reminder.self, RemindersSchemaV1_1.Tag.self,
            RemindersSchemaV1_1.ReminderTag.self,
        ]

        enum Reminder: Model {
            static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
                Column("id", .text).primaryKey()
                Column("title", .text).notNull()
                Column("listID", .text).notNull().references("remindersLists", "id", onDelete: .cascade)
                Column("dueDate", .text)
                Column("isDone", .integer).notNull().defaults(0)
                Column("priority", .integer).check("priority BETWEEN 0 AND 9")
                Column("notes", .text).notNull().defaults("")
                Index("reminders_listID", on: "listID")
            }
        }
    }
}
