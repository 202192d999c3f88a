import OfflineStore

/// Release 2.1.0: shared lists. A list has an owner (`ownerID`, the user id a sync token names as
/// its subject) and members (`listMembers`): the server's scope rules (`Samples/reminders-rules.json`)
/// let each user see and change the lists they own or are members of, and nothing else.
public enum RemindersSchemaV2_1: VersionedSchema {
    public static let versionIdentifier: Schema.Version = "2.1.0"
    public static let models: [any Model.Type] = [
        ReminderList.self, RemindersSchemaV2.Reminder.self, RemindersSchemaV1_1.Tag.self,
        RemindersSchemaV1_1.ReminderTag.self, RemindersSchemaV2.ReminderSearch.self, ListMember.self,
    ]

    public enum ReminderList: Model {
        public static let tableDefinition = TableDefinition("remindersLists", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
            /// The user who owns the list; NULL for a list made before 2.1, which only a token
            /// without a subject (the operator's) reads under the sample's rules.
            Column("ownerID", .text)
        }
    }

    /// A user a list is shared with: they read its reminders and write them.
    public enum ListMember: Model {
        public static let tableDefinition = TableDefinition("listMembers", options: [.strict, .withoutRowID]) {
            Column("listID", .text).notNull().references("remindersLists", "id", onDelete: .cascade)
            Column("userID", .text).notNull()
            PrimaryKey("listID", "userID")
            Index("listMembers_userID", on: "userID")
        }
    }
}
