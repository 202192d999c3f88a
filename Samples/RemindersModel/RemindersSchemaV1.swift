import OfflineStore

/// Release 1.0.0: lists and reminders. STRICT tables with text UUID keys; `dueDate` is a
/// `YYYY-MM-DD` text and `listID` points at a list without a declared foreign key.
public enum RemindersSchemaV1: VersionedSchema {
    public static let versionIdentifier: Schema.Version = "1.0.0"
    public static let models: [any Model.Type] = [ReminderList.self, Reminder.self]

    public enum ReminderList: Model {
        public static let tableDefinition = TableDefinition("remindersLists", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }

    public enum Reminder: Model {
        public static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("listID", .text).notNull()
            Column("dueDate", .text)
            Column("isDone", .integer).notNull().defaults(0)
        }
    }
}
