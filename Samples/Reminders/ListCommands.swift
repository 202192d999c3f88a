import Foundation
import OfflineStore

/// `lists`, `lists add NAME`, `lists rm NAME`, `lists share` and `lists unshare`, and finding a
/// list by name for `add --list NAME`.
///
/// List names are kept unique by the tool (the schema does not require it) so that a name
/// always finds one list; should a file hold duplicates anyway, the oldest wins.
enum ListCommands {
    /// Creates the list, owned by `owner` when given (schema 2.1), and returns its id; refuses a
    /// name already in use.
    static func add(name: String, owner: String?, in db: Database) throws -> String {
        if let existing = try id(ofListNamed: name, in: db) {
            throw CommandFailure.runtime("a list named \"\(name)\" already exists (\(existing))")
        }
        let id = try create(name: name, in: db)
        if let owner { try db.execute("UPDATE remindersLists SET ownerID = \(owner) WHERE id = \(id)") }
        return id
    }

    /// Makes `user` a member of the list (or, with `shares` false, no longer one). Returns whether
    /// that changed anything.
    static func share(name: String, with user: String, shares: Bool, in db: Database) throws -> Bool {
        guard let id = try id(ofListNamed: name, in: db) else {
            throw CommandFailure.runtime("no list named \"\(name)\" (see `reminders lists`)")
        }
        if shares {
            try db.execute("INSERT OR IGNORE INTO listMembers (listID, userID) VALUES (\(id), \(user))")
        } else {
            try db.execute("DELETE FROM listMembers WHERE listID = \(id) AND userID = \(user)")
        }
        return db.changesCount > 0
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

    /// The lists, oldest first, with how many reminders each has (and, from schema 2.1, who owns
    /// each and whom it is shared with).
    static func show(release: AppRelease, in db: Database) throws -> String {
        let shared = release.has(.sharedLists)
        let rows = try db.fetchAll(
            shared
                ? """
                SELECT remindersLists.id, remindersLists.name, count(reminders.id), remindersLists.ownerID,
                    (SELECT group_concat(userID, ', ') FROM
                        (SELECT userID FROM listMembers WHERE listID = remindersLists.id ORDER BY userID))
                FROM remindersLists LEFT JOIN reminders ON reminders.listID = remindersLists.id
                GROUP BY remindersLists.id ORDER BY remindersLists.rowid
                """
                : """
                SELECT remindersLists.id, remindersLists.name, count(reminders.id)
                FROM remindersLists LEFT JOIN reminders ON reminders.listID = remindersLists.id
                GROUP BY remindersLists.id ORDER BY remindersLists.rowid
                """)
        guard !rows.isEmpty else { return "No lists." }
        var table = TextTable(
            header: shared ? ["ID", "REMINDERS", "OWNER", "SHARED WITH", "NAME"] : ["ID", "REMINDERS", "NAME"],
            rightAlignedColumns: [1])
        for row in rows {
            var cells = [try row.decode(String.self, at: 0), String(try row.decode(Int.self, at: 2))]
            if shared {
                cells.append(try row.decode(String?.self, at: 3) ?? "-")
                cells.append(try row.decode(String?.self, at: 4) ?? "-")
            }
            cells.append(try row[1])
            table.rows.append(cells)
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
