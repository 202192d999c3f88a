import OfflineStore

/// The Reminders app's schema history. Shipped stages never change; new releases append.
public enum RemindersMigrationPlan: MigrationPlan {
    public static let schemas: [any VersionedSchema.Type] = [
        RemindersSchemaV1.self, RemindersSchemaV1_1.self, RemindersSchemaV2.self, RemindersSchemaV2_1.self,
    ]

    public static let stages: [MigrationStage] = [
        .lightweight(fromVersion: RemindersSchemaV1.self, toVersion: RemindersSchemaV1_1.self),
        .custom(
            fromVersion: RemindersSchemaV1_1.self, toVersion: RemindersSchemaV2.self,
            willMigrate: { context in
                // A reminder whose list is gone would violate the new foreign key: give it a list
                // rather than lose it. Which lists are gone is this device's own state, so the list
                // and the move are recorded for sync, or they would exist on this device alone. The
                // list gets a new key, the same on every device that recovers it: the old key was
                // deleted, and a deleted key inserted again is the protocol's known gap (§8.5).
                if try context.tableExists("reminders") {
                    let orphaned = try context.database.fetchAll(
                        String.self,
                        """
                        SELECT DISTINCT listID FROM reminders
                        WHERE listID NOT IN (SELECT id FROM remindersLists) ORDER BY listID
                        """)
                    for list in orphaned {
                        let recovered = "recovered-" + list
                        try context.execute(
                            "INSERT OR IGNORE INTO remindersLists (id, name) VALUES (\(recovered), 'Recovered list')")
                        try context.recordChanges(in: "remindersLists", where: "id = \(recovered)")
                        try context.execute("UPDATE reminders SET listID = \(recovered) WHERE listID = \(list)")
                        try context.recordChanges(in: "reminders", columns: ["listID"], where: "listID = \(recovered)")
                    }
                }
                try context.rebuildTable(
                    RemindersSchemaV2.Reminder.self,
                    values: ["dueAt": "CAST(unixepoch(\"old\".dueDate) AS REAL)"])
            },
            didMigrate: { context in
                // Rows the rebuild did not touch (it already ran, or ran on a purged file) still
                // need the backfills; both are no-ops when there is nothing to fill.
                try context.updateInBatches(
                    "reminders", set: "dueAt = CAST(unixepoch(dueDate) AS REAL)",
                    where: "dueAt IS NULL AND dueDate IS NOT NULL")
                try context.execute(
                    """
                    INSERT INTO reminderSearch (reminderID, title, notes)
                    SELECT id, title, notes FROM reminders
                    WHERE id NOT IN (SELECT reminderID FROM reminderSearch)
                    """)
            }),
        // Additive: a nullable column and a new table, which releases 2.0 and later sync beside.
        .lightweight(fromVersion: RemindersSchemaV2.self, toVersion: RemindersSchemaV2_1.self),
    ]
}
