import Foundation
import OfflineStore

/// A change a site made, as its change log recorded it: the reference model's input.
struct ModelEvent {
    enum Kind { case insert, update, delete }
    var table: String
    /// The key as the change log keeps it (the value, or `quote(a),quote(b)` for two columns).
    var key: String
    var kind: Kind
    /// For an insert every column of the new row; for an update the one column written.
    var values: [String: DatabaseValue]
    var version: ModelVersion
}

/// (clock, site id): the total order last-writer-wins uses (Protocol/README.md §7.2).
struct ModelVersion: Comparable {
    var clock: Int64
    var site: Data
    static func < (lhs: ModelVersion, rhs: ModelVersion) -> Bool {
        lhs.clock != rhs.clock ? lhs.clock < rhs.clock : lhs.site.lexicographicallyPrecedes(rhs.site)
    }
}

/// Tables as `table → key → column → value`.
typealias TableContents = [String: [String: [String: DatabaseValue]]]

/// The merge rules of Protocol/README.md §8, written from the spec rather than from
/// `ChangeLog.apply`: what every site must hold once it has applied every change, whatever the
/// order. Rows are keyed by fresh ids and never re-inserted after a delete (§8.5).
enum MergeModel {
    /// A foreign key of the Reminders schema: `child.column` refers to `parent`'s key.
    struct Reference {
        var child: String
        var column: String
        var parent: String
    }

    static let references = [
        Reference(child: "reminders", column: "listID", parent: "remindersLists"),
        Reference(child: "reminderTags", column: "reminderID", parent: "reminders"),
        Reference(child: "reminderTags", column: "tagID", parent: "tags"),
    ]

    /// Reminders 1.x: `listID` refers to no table (a reminder outlives its list).
    static let referencesOfReleaseOne = references.filter { $0.child == "reminderTags" }

    /// The columns 1.1 added to `reminders` with their defaults: a row a 1.0 device inserted has
    /// them on every 1.1 device until a 1.1 device writes them.
    static let columnsReleaseOnePointZeroLacks: [String: [String: DatabaseValue]] = [
        "reminders": ["priority": .null, "notes": .text("")]
    ]

    /// What a 1.x device's row lacks on the latest release: 1.1's columns, and 2.1's `ownerID` of a
    /// list.
    static let columnsReleaseOneLacksOnTheLatest = columnsReleaseOnePointZeroLacks.merging([
        "remindersLists": ["ownerID": .null]
    ]) { $0.merging($1) { first, _ in first } }

    /// Every site's rows once it has applied every change in `events`, for a schema whose foreign
    /// keys are `references`; a column an insert did not carry (an older release wrote it) takes
    /// its value from `defaults` (table, then column) unless an update wrote it.
    static func merge(
        _ events: [ModelEvent], tables: [String], references: [Reference] = references,
        defaults: [String: [String: DatabaseValue]] = [:]
    ) -> TableContents {
        var contents = TableContents()
        for table in tables { contents[table] = [:] }
        let rows = Dictionary(grouping: events) { [$0.table, $0.key] }
        for (identity, changes) in rows {
            // §8.1: the row's creation and deletion versions are those of its newest insert and delete.
            let inserts = changes.filter { $0.kind == .insert }
            guard let insert = inserts.max(by: { $0.version < $1.version }) else { continue }  // §8.2.7: updates wait
            let creation = insert.version
            let deletion = changes.filter { $0.kind == .delete }.map(\.version).max()
            // §8.2.4: a delete newer than the creation wins over every update.
            if let deletion, deletion > creation { continue }
            var values = insert.values
            for (column, value) in defaults[identity[0]] ?? [:] where values[column] == nil { values[column] = value }
            var versions: [String: ModelVersion] = [:]
            // §8.2.8: each column takes the newest write not older than the creation.
            for update in changes where update.kind == .update && update.version >= creation {
                for (column, value) in update.values
                where update.version > (versions[column] ?? creation)
                    || (versions[column] == nil && update.version == creation)
                {
                    values[column] = value
                    versions[column] = update.version
                }
            }
            contents[identity[0], default: [:]][identity[1]] = values
        }
        // §8.4: a child whose parent is gone is gone too (as ON DELETE CASCADE), transitively.
        var changed = true
        while changed {
            changed = false
            for reference in references {
                let parents = contents[reference.parent] ?? [:]
                for (key, row) in contents[reference.child] ?? [:] {
                    guard case .text(let parent) = row[reference.column] ?? .null, parents[parent] == nil else {
                        continue
                    }
                    contents[reference.child]?[key] = nil
                    changed = true
                }
            }
        }
        return contents
    }

    /// One line per row, sorted: what two sites' tables are compared by.
    static func canonicalText(_ contents: TableContents) -> String {
        var lines: [String] = []
        for table in contents.keys.sorted() {
            for key in (contents[table] ?? [:]).keys.sorted() {
                let row = contents[table]![key]!
                let cells = row.keys.sorted().map { "\($0)=\(literal(row[$0]!))" }
                lines.append("\(table)[\(key)] " + cells.joined(separator: " "))
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func literal(_ value: DatabaseValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let number): "\(number)"
        case .real(let number): "\(number)r"
        case .text(let text): "'\(text)'"
        case .blob(let data): "x'\(data.map { String(format: "%02x", $0) }.joined())'"
        }
    }

    /// FNV-1a of the canonical text, to print one short number per site.
    static func hash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
