import OfflineStore

/// Release 1.1.0 (additive): a nullable `priority`, `notes TEXT NOT NULL DEFAULT ''`, tags with
/// a join table, and an index on `reminders.listID`.
public enum RemindersSchemaV1_1: VersionedSchema {
    public static let versionIdentifier: Schema.Version = "1.1.0"
    public static let models: [any Model.Type] = [
        RemindersSchemaV1.ReminderList.self, Reminder.self, Tag.self, ReminderTag.self,
    ]

    public enum Reminder: Model {
        public static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("listID", .text).notNull()
            Column("dueDate", .text)
            Column("isDone", .integer).notNull().defaults(0)
            Column("priority", .integer).check("priority BETWEEN 0 AND 9")
            Column("notes", .text).notNull().defaults("")
            Index("reminders_listID", on: "listID")
        }
    }

    public enum Tag: Model {
        public static let tableDefinition = TableDefinition("tags", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull().collate("NOCASE").unique()
        }
    }

    public enum ReminderTag: Model {
        public static let tableDefinition = TableDefinition("reminderTags", options: [.strict, .withoutRowID]) {
            Column("reminderID", .text).notNull().references("reminders", "id", onDelete: .cascade)
            Column("tagID", .text).notNull().references("tags", "id", onDelete: .cascade)
            PrimaryKey("reminderID", "tagID")
            Index("reminderTags_tagID", on: "tagID")
        }
    }
}
