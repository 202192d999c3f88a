import OfflineStore

/// The 2.0 `reminderSearch` FTS5 table, which the app (not a trigger) keeps in step with
/// `reminders`: every write to a reminder's title or notes, and every delete, updates its row
/// (found by `reminderID`) in the same transaction.
///
/// See <https://www.sqlite.org/fts5.html>.
enum SearchIndex {
    static func insert(reminderID: String, title: String, notes: String, in db: Database) throws {
        try db.execute(
            "INSERT INTO reminderSearch (reminderID, title, notes) VALUES (\(reminderID), \(title), \(notes))")
    }

    /// Copies the reminder's current title and notes; inserts the row if it is missing, so an
    /// index that lost a row heals on the next edit.
    static func refresh(reminderID: String, in db: Database) throws {
        try db.execute(
            """
            UPDATE reminderSearch SET
                title = (SELECT title FROM reminders WHERE id = \(reminderID)),
                notes = (SELECT notes FROM reminders WHERE id = \(reminderID))
            WHERE reminderID = \(reminderID)
            """)
        guard db.changesCount == 0 else { return }
        try db.execute(
            """
            INSERT INTO reminderSearch (reminderID, title, notes)
            SELECT id, title, notes FROM reminders WHERE id = \(reminderID)
            """)
    }

    static func delete(reminderID: String, in db: Database) throws {
        try db.execute("DELETE FROM reminderSearch WHERE reminderID = \(reminderID)")
    }

    /// The user's text as one FTS5 string (a phrase): wrapped in double quotes with the quotes
    /// inside doubled, so `OR`, `NEAR(…)`, `title:`, `*` or a stray quote in it are searched for
    /// as words instead of changing or breaking the query. The result is bound, not spliced.
    /// See <https://www.sqlite.org/fts5.html#fts5_strings>.
    static func phrase(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
