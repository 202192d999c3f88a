import OfflineStore

/// Release 2.0.0: `dueAt REAL` (seconds since 1970, backfilled from `dueDate`, which stays as a
/// deprecated column), `listID REFERENCES remindersLists(id) ON DELETE CASCADE` (a foreign key on
/// an existing column: a table rebuild), and an FTS5 search table.
public enum RemindersSchemaV2: VersionedSchema {
    public static let versionIdentifier: Schema.Version = "2.0.0"
    public static let models: [any Model.Type] = [
        RemindersSchemaV1.ReminderList.self, Reminder.self, RemindersSchemaV1_1.Tag.self,
        RemindersSchemaV1_1.ReminderTag.self, ReminderSearch.self,
    ]

    public enum Reminder: Model {
        public static let tableDefinition = TableDefinition("reminders", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("listID", .text).notNull().references("remindersLists", "id", onDelete: .cascade)
            /// Deprecated since 2.0.0: read and write `dueAt`.
            Column("dueDate", .text)
            Column("isDone", .integer).notNull().defaults(0)
            Column("priority", .integer).check("priority BETWEEN 0 AND 9")
            Column("notes", .text).notNull().defaults("")
            Column("dueAt", .real)
            Index("reminders_listID", on: "listID")
        }
    }

    /// Full-text search over titles and notes; the app keeps it in step with `reminders`.
    public enum ReminderSearch: Model {
        public static let tableDefinition = TableDefinition(
            fts5: "reminderSearch", columns: ["title", "notes"], unindexed: ["reminderID"],
            options: [.tokenize("unicode61 remove_diacritics 2")])
    }
}
