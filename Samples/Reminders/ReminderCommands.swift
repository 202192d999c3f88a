import Foundation
import OfflineStore

/// `add`, `edit` and `rm`: the writes, each made for the columns the release's schema has, and
/// at 2.0 with the search index kept in step (the caller runs each in one transaction).
enum ReminderCommands {
    /// Inserts the reminder (in its list, created if missing) and returns its id.
    static func add(_ reminder: NewReminder, release: AppRelease, in db: Database) throws -> String {
        let id = UUID().uuidString.lowercased()
        let listID = try ListCommands.findOrCreate(named: reminder.listName, in: db)
        var values: [(column: String, value: DatabaseValue)] = [
            ("id", .text(id)), ("title", .text(reminder.title)), ("listID", .text(listID)),
            // Written at every release: 1.x reads only this column, and it stays for them at 2.0.
            ("dueDate", reminder.due.map { .text($0.text) } ?? .null),
        ]
        if release.has(.priorityAndNotes) {
            values.append(("priority", reminder.priority.map { .integer(Int64($0)) } ?? .null))
            // Left out when not given, so the column's DEFAULT '' applies.
            if let notes = reminder.notes { values.append(("notes", .text(notes))) }
        }
        if release.has(.dueAtAndSearch) {
            values.append(("dueAt", reminder.due.map { .real($0.secondsSince1970) } ?? .null))
        }
        let columns = SQL.joined(values.map { entry -> SQL in "\(identifier: entry.column)" }, separator: ", ")
        let placeholders = SQL.joined(values.map { entry -> SQL in "\(entry.value)" }, separator: ", ")
        try db.execute("INSERT INTO reminders (\(columns)) VALUES (\(placeholders))")
        if release.has(.dueAtAndSearch) {
            try SearchIndex.insert(reminderID: id, title: reminder.title, notes: reminder.notes ?? "", in: db)
        }
        return id
    }

    static func edit(_ edit: ReminderEdit, release: AppRelease, in db: Database) throws {
        var assignments: [SQL] = []
        if let title = edit.title { assignments.append("title = \(title)") }
        if let priority = edit.priority { assignments.append("priority = \(priority)") }
        if let notes = edit.notes { assignments.append("notes = \(notes)") }
        if edit.marksDone { assignments.append("isDone = \(true)") }
        if let due = edit.due {
            // dueDate at every release (1.x reads only it); at 2.0 dueAt too.
            assignments.append("dueDate = \(due.text)")
            if release.has(.dueAtAndSearch) { assignments.append("dueAt = \(due.secondsSince1970)") }
        }
        try db.execute(
            "UPDATE reminders SET \(SQL.joined(assignments, separator: ", ")) WHERE id = \(edit.id)")
        // SQLite counts a matched row as changed even when its values stay the same, so 0 means
        // no reminder has the id.
        guard db.changesCount == 1 else { throw notFound(edit.id) }
        if release.has(.dueAtAndSearch), edit.changesSearchableText {
            try SearchIndex.refresh(reminderID: edit.id, in: db)
        }
    }

    /// Deletes the reminder; its `reminderTags` rows (1.1 and later) go by the foreign key's
    /// `ON DELETE CASCADE`, which needs `foreign_keys` on (the default of `Configuration`).
    static func remove(id: String, release: AppRelease, in db: Database) throws {
        try db.execute("DELETE FROM reminders WHERE id = \(id)")
        guard db.changesCount == 1 else { throw notFound(id) }
        if release.has(.dueAtAndSearch) {
            try SearchIndex.delete(reminderID: id, in: db)
        }
    }

    private static func notFound(_ id: String) -> CommandFailure {
        .runtime("no reminder has the id \"\(id)\"")
    }
}
