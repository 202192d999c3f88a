import OfflineStore

/// What release 2.0 derives and keeps in step after changes arrive from other devices, which may
/// run 1.x and know only the deprecated `dueDate`: `dueAt` from `dueDate` (none when a 1.x device
/// cleared it), and the search index from titles and notes.
public enum ReleaseTwoDerivations {
    public static func apply(_ db: Database) throws {
        try db.execute(
            """
            UPDATE reminders SET dueAt = CAST(unixepoch(dueDate) AS REAL)
            WHERE dueAt IS NOT CAST(unixepoch(dueDate) AS REAL)
            """)
        try db.execute(
            """
            DELETE FROM reminderSearch WHERE reminderID NOT IN (SELECT id FROM reminders)
                OR reminderID IN (
                    SELECT s.reminderID FROM reminderSearch AS s JOIN reminders AS r ON r.id = s.reminderID
                    WHERE s.title IS NOT r.title OR s.notes IS NOT r.notes)
            """)
        try db.execute(
            """
            INSERT INTO reminderSearch (reminderID, title, notes)
            SELECT id, title, notes FROM reminders WHERE id NOT IN (SELECT reminderID FROM reminderSearch)
            """)
    }
}
