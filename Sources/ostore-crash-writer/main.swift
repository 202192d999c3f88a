import Foundation
import OfflineStore
import RemindersModel

// ostore-crash-writer --db PATH: the child process of the change-log crash test. It opens a
// Reminders store with change tracking and commits random transactions (inserts, updates,
// deletes over lists, reminders and tags) until it is killed. Not a user tool.

let arguments = CommandLine.arguments
guard arguments.count == 3, arguments[1] == "--db" else {
    FileHandle.standardError.write(Data("usage: ostore-crash-writer --db PATH\n".utf8))
    exit(2)
}
do {
    let db = try Database(path: arguments[2])
    _ = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
    var generator = SystemRandomNumberGenerator()
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while true {
        try db.transaction(.immediate) { db in
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let lists = try db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY random() LIMIT 1")
                let reminders = try db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY random() LIMIT 1")
                switch Int.random(in: 0..<10, using: &generator) {
                case 0, 1:
                    try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(UUID().uuidString), 'list')")
                case 2, 3, 4:
                    guard let list = lists.first else { continue }
                    try db.execute(
                        "INSERT INTO reminders (id, title, listID) VALUES (\(UUID().uuidString), 'task', \(list))")
                case 5, 6:
                    guard let reminder = reminders.first else { continue }
                    try db.execute(
                        "UPDATE reminders SET title = \(UUID().uuidString), priority = \(Int.random(in: 0...9, using: &generator)) WHERE id = \(reminder)"
                    )
                case 7:
                    guard let reminder = reminders.first else { continue }
                    try db.execute("DELETE FROM reminders WHERE id = \(reminder)")
                case 8:
                    guard let list = lists.first else { continue }
                    try db.execute("DELETE FROM remindersLists WHERE id = \(list)")  // cascades to its reminders
                default:
                    try db.execute("INSERT INTO tags (id, name) VALUES (\(UUID().uuidString), \(UUID().uuidString))")
                }
            }
        }
    }
} catch {
    FileHandle.standardError.write(Data("ostore-crash-writer: \(error)\n".utf8))
    exit(1)
}
