import OfflineStore

/// `list [--json] [--search TEXT]`: the reminders, oldest first (best match first with
/// `--search`), as a text table or as JSON objects holding every column of the release's
/// `reminders` table.
struct ReminderListing {
    var asJSON: Bool
    /// Words to find in titles and notes through the 2.0 `reminderSearch` table.
    var search: String?

    func output(release: AppRelease, in db: Database) throws -> String {
        asJSON ? try json(release: release, in: db) : try table(release: release, in: db)
    }

    private func json(release: AppRelease, in db: Database) throws -> String {
        let columns = SQL.joined(
            release.reminderColumns.map { column -> SQL in "reminders.\(identifier: column)" }, separator: ", ")
        let rows = try db.fetchAll("SELECT \(columns) FROM reminders \(filter) ORDER BY \(order)")
        return JSONOutput.array(
            of: try rows.map { row in
                try row.columnNames.enumerated().map { index, name in (name, try row.databaseValue(at: index)) }
            })
    }

    private func table(release: AppRelease, in db: Database) throws -> String {
        // At 2.0 `dueAt` is the due date and `dueDate` is deprecated; show the day `dueAt` names.
        let due: SQL =
            release.has(.dueAtAndSearch)
            ? "coalesce(date(reminders.dueAt, 'unixepoch'), reminders.dueDate)" : "reminders.dueDate"
        let priority: SQL = release.has(.priorityAndNotes) ? "reminders.priority" : "NULL"
        let rows = try db.fetchAll(
            """
            SELECT reminders.id, reminders.isDone, \(due), \(priority), remindersLists.name, reminders.title
            FROM reminders LEFT JOIN remindersLists ON remindersLists.id = reminders.listID \(filter)
            ORDER BY \(order)
            """)
        guard !rows.isEmpty else { return search == nil ? "No reminders." : "No reminders match." }
        var header = ["ID", "DONE", "DUE", "PRIORITY", "LIST", "TITLE"]
        if !release.has(.priorityAndNotes) { header.remove(at: 3) }
        var table = TextTable(header: header, rightAlignedColumns: [])
        for row in rows {
            var cells = [
                try row.decode(String.self, at: 0), try row.decode(Bool.self, at: 1) ? "[x]" : "[ ]",
                try row.decode(String?.self, at: 2) ?? "-", try row.decode(Int?.self, at: 3).map(String.init) ?? "-",
                try row.decode(String?.self, at: 4) ?? "?", try row.decode(String.self, at: 5),
            ]
            if !release.has(.priorityAndNotes) { cells.remove(at: 3) }
            table.rows.append(cells)
        }
        return table.rendered()
    }

    /// The join and condition of a search; empty without one. The text is bound, never spliced.
    private var filter: SQL {
        guard let search else { return "" }
        return """
            JOIN reminderSearch ON reminderSearch.reminderID = reminders.id
            WHERE reminderSearch MATCH \(SearchIndex.phrase(search))
            """
    }

    /// Insertion order (the rowid), or FTS5's relevance first when searching.
    private var order: SQL {
        search == nil ? "reminders.rowid" : "reminderSearch.rank, reminders.rowid"
    }
}
