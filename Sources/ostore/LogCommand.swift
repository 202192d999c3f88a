import CommandLineTool
import Foundation
import OfflineStore

/// `ostore log --db PATH [--pending] [--json] [--limit N]`: the change log kept in the database's
/// metadatabase, read without the app's code.
enum LogCommand: Command {
    static let name = "log"
    static let synopsis = "--db PATH [--pending] [--json] [--limit N]"
    static let summary = "List a store's change log: which rows of which tables changed, how, when and where."
    static let options = [
        CommandOption(name: "--db", valueName: "PATH", help: "the database (it and its metadatabase opened read-only)"),
        CommandOption(name: "--pending", valueName: nil, help: "only the local changes not yet pushed"),
        CommandOption(name: "--json", valueName: nil, help: "print a JSON array instead of text lines"),
        CommandOption(name: "--limit", valueName: "N", help: "print at most N entries"),
    ]
    static let details = """
        Entries come in log order: local changes by sequence number (the order they were made), then
        changes from other sites by clock. The log keeps the latest change of each row and column, and
        no values: an app reads them from the rows when it pushes.

        Text: one line per entry, SEQ SITE CLOCK TABLE OPERATION KEY, where SEQ is - for a change
        from another site, SITE is this device's site id in hex (#N for another site), CLOCK is
        milliseconds-counter, OPERATION is insert, delete or update(COLUMN), and KEY is the primary
        key as SQL literals ('text', X'B10B', 42), in parentheses for a composite key.

        JSON: an array of objects, one per line, with keys seq (null for another site's change),
        site, clock, table, key (the key values in key order), op (insert, update, delete), columns
        (the changed column of an update, else empty) and pending. Key values keep their SQLite type:
          text      "string"
          integer   a number without fraction; outside ±(2^53 - 1) {"integer": "digits"}
          real      a number with a fraction or exponent; infinities {"real": "inf"} or "-inf"
          blob      {"blob": "base64"}
          NULL      null

        The metadatabase is the file PATH-ostore-meta beside the database.

        exit status: 0 ok, 2 usage error, unreadable database, or no metadatabase
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard let path = arguments.values["--db"], arguments.positionals.isEmpty else {
            Console.error("ostore log: give the database with --db PATH\nusage: ostore log \(synopsis)")
            return .failure
        }
        var limit: Int?
        if let text = arguments.values["--limit"] {
            guard let value = Int(text), value >= 0 else {
                Console.error("ostore log: --limit needs a whole number of entries, not \(text)")
                return .failure
            }
            limit = value
        }
        let json = arguments.flags.contains("--json")
        let pendingOnly = arguments.flags.contains("--pending")
        do {
            let db = try Database.openReadOnly(path)
            guard let summary = try ChangeLogReader.summary(in: db) else {
                Console.error(
                    "ostore log: \(path) has no change log: there is no metadatabase "
                        + "\(Metadatabase.path(forDatabaseAt: path)) (the app creates it when it opens the store "
                        + "with ChangeLog.open)")
                return .failure
            }
            var printed = 0
            var batch: [String] = []
            // Lines go out in batches as they are read, so a long log is never held whole.
            func flush() {
                guard !batch.isEmpty else { return }
                Console.output(batch.joined(separator: "\n"))
                batch.removeAll(keepingCapacity: true)
            }
            if json { batch.append("[") }
            try ChangeLogReader.forEachEntry(in: db, pendingOnly: pendingOnly, limit: limit) { change in
                if json {
                    batch.append("  " + change.jsonObject)
                    // The comma goes on the previous line, which is only known once the next entry exists.
                    if printed > 0, batch.count >= 2 { batch[batch.count - 2] += "," }
                } else {
                    batch.append(change.textLine)
                }
                printed += 1
                if batch.count >= 256 {
                    // Keep the last JSON line back: it may still need its comma.
                    let last = json ? batch.popLast() : nil
                    flush()
                    if let last { batch.append(last) }
                }
            }
            if json { batch.append("]") }
            flush()
            Console.error(
                "ostore log: \(printed) \(printed == 1 ? "entry" : "entries")"
                    + "\(pendingOnly ? " pending" : ""); \(summary.pendingChanges) pending in all")
            return .success
        } catch {
            Console.error("ostore log: cannot read \(path): \(error)")
            return .failure
        }
    }
}
