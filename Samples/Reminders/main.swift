import Foundation
import OfflineStore

// reminders --db PATH COMMAND ...
//   add TITLE        prints the new id alone on a line
//   list [--json]    every reminder, oldest first
//   done ID          marks a reminder done
//   rm ID            deletes a reminder

let usage = """
    usage: reminders --db PATH add TITLE
           reminders --db PATH list [--json]
           reminders --db PATH done ID
           reminders --db PATH rm ID
    """

func fail(_ message: String, code: Int32) -> Never {
    FileHandle.standardError.write(Data("reminders: \(message)\n".utf8))
    exit(code)
}

var arguments = Array(CommandLine.arguments.dropFirst())
if arguments.contains("--help") || arguments.contains("-h") {
    print(usage)
    exit(0)
}
guard arguments.count >= 3, arguments[0] == "--db" else { fail("missing --db PATH\n\(usage)", code: 2) }
let path = arguments[1]
let command = arguments[2]
let operands = Array(arguments.dropFirst(3))

do {
    let store = try ReminderStore.open(path: path)
    switch (command, operands) {
    case ("add", let words) where !words.isEmpty:
        let reminder = Reminder(
            id: UUID().uuidString.lowercased(), title: words.joined(separator: " "), done: false, createdAt: Date())
        try store.write { db in try reminder.insert(db) }
        print(reminder.id)
    case ("list", let flags) where flags.isEmpty || flags == ["--json"]:
        let reminders = try store.read { db in
            try Reminder.fetchAll(db, "SELECT * FROM reminders ORDER BY createdAt, id")
        }
        if flags == ["--json"] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            encoder.dateEncodingStrategy = .iso8601
            print(String(decoding: try encoder.encode(reminders), as: UTF8.self))
        } else if reminders.isEmpty {
            print("No reminders.")
        } else {
            for reminder in reminders {
                print("\(reminder.done ? "[x]" : "[ ]") \(reminder.title)  (\(reminder.id))")
            }
        }
    case ("done", let ids) where ids.count == 1:
        let changed = try store.write { db in
            try db.execute("UPDATE reminders SET done = \(true) WHERE id = \(ids[0])")
            return db.changesCount
        }
        guard changed == 1 else { fail("no reminder with id \(ids[0])", code: 1) }
    case ("rm", let ids) where ids.count == 1:
        let changed = try store.write { db in
            try db.execute("DELETE FROM reminders WHERE id = \(ids[0])")
            return db.changesCount
        }
        guard changed == 1 else { fail("no reminder with id \(ids[0])", code: 1) }
    default:
        fail("unknown command or arguments: \(command) \(operands.joined(separator: " "))\n\(usage)", code: 2)
    }
} catch {
    fail("\(error)", code: 1)
}
