import OfflineStore
import TestSupport

/// The random offline work: fresh ids from a run-wide counter, and a reminder–tag pair is never
/// linked twice (a deleted key inserted again is the protocol's known gap, §8.5). A device on
/// Reminders 1.0 writes only what 1.0 has (lists, and reminders without priority, notes or tags);
/// devices on 1.x also edit `dueDate`, which both 1.x releases have, and with
/// `dueDatesOnEveryRelease` so do 2.0 devices, writing `dueAt` with it as the app does. Without
/// it, the work on 2.0 and its random choices are what they always were, so a seed replays as before.
struct Workload {
    let dueDatesOnEveryRelease: Bool
    private var counter = 0
    private var linked = Set<String>()
    private let words = ["milk", "bread", "call mum", "taxes", "gym", "books", "plants", "car"]

    init(dueDatesOnEveryRelease: Bool = false) {
        self.dueDatesOnEveryRelease = dueDatesOnEveryRelease
    }

    private mutating func freshID(_ peer: SyncPeer, _ kind: String) -> String {
        counter += 1
        return "\(kind)\(counter)-\(peer.name)"
    }

    mutating func randomOperation(on peer: SyncPeer, using random: inout SeededGenerator) throws {
        let db = peer.db
        let isReleaseOnePointZero = peer.release == ConvergenceRun.releaseOnePointZero
        let lists = try db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id")
        let reminders = try db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id")
        let tags = isReleaseOnePointZero ? [] : try db.fetchAll(String.self, "SELECT id FROM tags ORDER BY id")
        let links =
            isReleaseOnePointZero
            ? [] : try db.fetchAll(String.self, "SELECT reminderID || '|' || tagID FROM reminderTags ORDER BY 1")
        let word =
            words[Int.random(in: 0..<words.count, using: &random)] + " \(Int.random(in: 0..<100, using: &random))"
        // 1.0 has no tags: its choices end with the deletes of reminders.
        var choice = Int.random(in: 0..<(isReleaseOnePointZero ? 78 : 100), using: &random)
        if lists.isEmpty { choice = 0 } else if reminders.isEmpty && choice >= 26 { choice = 26 }
        switch choice {
        case 0..<10:
            try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(freshID(peer, "L")), \(word))")
        case 10..<18:
            let list = lists.randomElement(using: &random)!
            try db.execute("UPDATE remindersLists SET name = \(word) WHERE id = \(list)")
        case 18..<24:
            // On 2.0 its reminders (and their tags) go with it, by ON DELETE CASCADE, logged as
            // deletes; 1.x has no foreign key on `listID`, so they stay.
            let list = lists.randomElement(using: &random)!
            try db.execute("DELETE FROM remindersLists WHERE id = \(list)")
        case 24..<44:
            let list = lists.randomElement(using: &random)!
            let id = freshID(peer, "R")
            guard !isReleaseOnePointZero else {
                return try db.execute("INSERT INTO reminders (id, title, listID) VALUES (\(id), \(word), \(list))")
            }
            try db.execute(
                """
                INSERT INTO reminders (id, title, listID, priority)
                VALUES (\(id), \(word), \(list), \(Int64.random(in: 0...9, using: &random)))
                """)
        case 44..<70:
            if peer.release != nil || dueDatesOnEveryRelease, Int.random(in: 0..<4, using: &random) == 0 {
                let reminder = reminders.randomElement(using: &random)!
                let day = Int.random(in: 1...28, using: &random)
                let dueDate: DatabaseValue = day > 25 ? .null : .text("2026-12-\(day < 10 ? "0" : "")\(day)")
                guard peer.release == nil else {
                    return try db.execute("UPDATE reminders SET dueDate = \(dueDate) WHERE id = \(reminder)")
                }
                return try db.execute(
                    """
                    UPDATE reminders SET dueDate = \(dueDate), dueAt = CAST(unixepoch(\(dueDate)) AS REAL)
                    WHERE id = \(reminder)
                    """)
            }
            let reminder = reminders.randomElement(using: &random)!
            // 1.0 has neither priority nor notes: its edits are the title, done and the list.
            let edit =
                isReleaseOnePointZero
                ? [0, 1, 5][Int.random(in: 0..<3, using: &random)] : Int.random(in: 0..<6, using: &random)
            switch edit {
            case 0: try db.execute("UPDATE reminders SET title = \(word) WHERE id = \(reminder)")
            case 1: try db.execute("UPDATE reminders SET isDone = 1 - isDone WHERE id = \(reminder)")
            case 2:
                try db.execute(
                    "UPDATE reminders SET priority = \(Int64.random(in: 0...9, using: &random)) WHERE id = \(reminder)")
            case 3: try db.execute("UPDATE reminders SET notes = \(word) WHERE id = \(reminder)")
            case 4:
                try db.execute(
                    "UPDATE reminders SET title = \(word), notes = \(word + "!") WHERE id = \(reminder)")
            default:
                // Moved to another list, which another device may be deleting.
                let list = lists.randomElement(using: &random)!
                try db.execute("UPDATE reminders SET listID = \(list) WHERE id = \(reminder)")
            }
        case 70..<78:
            try db.execute("DELETE FROM reminders WHERE id = \(reminders.randomElement(using: &random)!)")
        case 78..<84:
            let id = freshID(peer, "T")
            try db.execute("INSERT INTO tags (id, name) VALUES (\(id), \("tag " + id))")
        case 84..<93:
            guard let tag = tags.randomElement(using: &random) else {
                let id = freshID(peer, "T")
                return try db.execute("INSERT INTO tags (id, name) VALUES (\(id), \("tag " + id))")
            }
            let reminder = reminders.randomElement(using: &random)!
            guard linked.insert(reminder + "|" + tag).inserted else { return }
            try db.execute("INSERT INTO reminderTags (reminderID, tagID) VALUES (\(reminder), \(tag))")
        case 93..<97:
            guard let link = links.randomElement(using: &random) else { return }
            let parts = link.split(separator: "|").map(String.init)
            try db.execute("DELETE FROM reminderTags WHERE reminderID = \(parts[0]) AND tagID = \(parts[1])")
        default:
            guard let tag = tags.randomElement(using: &random) else { return }
            try db.execute("DELETE FROM tags WHERE id = \(tag)")
        }
    }
}
