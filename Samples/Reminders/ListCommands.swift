import Foundation
import OfflineStore

/// `lists`, `lists add NAME` and `lists rm NAME`, and finding a list by name for `add --list NAME`.
///
/// List names are kept unique by the tool (the schema does not require it) so that a name
/// always finds one list; should a file hold duplicates anyway, the oldest wins.
enum ListCommands {
    /// Creates the list and returns its id; refuses a name already in use.
    static func add(name: String, in db: Database) throws -> String {
        if let existing = try id(ofListNamed: name, in: db) {
            throw CommandFailure.runtime("a list named \"\(name)\" already exists (\(existing))")
        }
        return try create(name: name, in: db)
    }

    /// Deletes the list and the reminders in it, each as `rm` would (releases before 2.0 declare
    /// no foreign key that would take them). Returns how many reminders it held.
    static func remove(name: String, release: AppRelease, in db: Database) throws -> Int {
        guard let id = try id(ofListNamed: name, in: db) else {
            throw CommandFailure.runtime("no list named \"\(name)\" (see `reminders lists`)")
        }
        let reminders = try db.fetchAll(String.self, "SELECT id FROM reminders WHERE listID = \(id)")
        for reminder in reminders { try ReminderCommands.remove(id: reminder, release: release, in: db) }
        try db.execute("DELETE FROM remindersLists WHERE id = \(id)")
        return reminders.count
    }

    /// The lists, oldest first, with how many reminders each has.
    static func show(in db: Database) throws -> String {
        let rows = try db.fetchAll(
            """
            SELECT remindersLists.id, remindersLists.name, count(reminders.id)
            FROM remindersLists LEFT JOIN reminders ON reminders.listID = remindersLists.id
            GROUP BY remindersLists.id ORDER BY remindersLists.rowid
            """)
        guard !rows.isEmpty else { return "No lists." }
        var table = TextTable(header: ["ID", "REMINDERS", "NAME"], rightAlignedColumns: [1])
        for row in rows {
            table.rows.append([try row.decode(String.self, at: 0), String(try row.decode(Int.self, at: 2)), try row[1]])
        }
        return table.rendered()
    }

    /// The id of the list with that name (exact, case-sensitive), creating the list if none has it.
    static func findOrCreate(named name: String, in db: Database) throws -> String {
        try id(ofListNamed: name, in: db) ?? create(name: name, in: db)
    }

    private static func id(ofListNamed name: String, in db: Database) throws -> String? {
        try db.fetchValue(String.self, "SELECT id FROM remindersLists WHERE name = \(name) ORDER BY rowid LIMIT 1")
    }

    private static func create(name: String, in db: Database) throws -> String {
        let id = UUID().uuidString.lowercased()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(id), \(name))")
        return id
    }
}
