import Foundation
import OfflineStoreSQLite

/// The values a batch's deletes took out of parent columns that a foreign key refers to other than
/// the parent's key (`REFERENCES categories(code)` with `code` UNIQUE): the log keeps a deleted
/// row's key and versions, not its values, so an orphan of such a key could not be told from one
/// whose parent has not arrived, and waited in the stash (Protocol/README.md §8.4) — for ever, or
/// until a new parent with the same value brought it back. Noted before each delete, looked up by
/// the orphan search of the same batch (``ChangeLog/resolveOrphans(after:foreignKeys:_:outcome:links:deletedParents:)``).
///
/// A child arriving in a later batch, after its parent was deleted, still waits in the stash: the
/// values are not kept past the batch.
///
/// Not `Sendable`: one apply uses it, on one thread.
final class DeletedParentValues {
    /// Per parent table (lowercased name), the column lists its non-key foreign keys refer to.
    private let referred: [String: [[String]]]
    /// Per parent table and column list (``slot(_:_:)``), the values deleted rows held.
    private var deleted: [String: Set<[DatabaseValue]>] = [:]

    init(_ links: [OrphanLink]) {
        var referred: [String: [[String]]] = [:]
        for link in links where link.hasParentColumns && link.parentKeyPlaces == nil {
            let parent = link.parent.lowercased()
            let columns = link.parentColumns.map { $0.lowercased() }
            if !(referred[parent] ?? []).contains(columns) { referred[parent, default: []].append(columns) }
        }
        self.referred = referred
    }

    /// Notes the referred values of the row `keyValues` of `table`, about to be deleted. Does
    /// nothing (and reads nothing) for a table no such foreign key refers to.
    func noteDeleting(
        _ table: String, keyColumns: [String], keyValues: [DatabaseValue], _ db: Database
    ) throws {
        guard let lists = referred[table.lowercased()] else { return }
        for columns in lists {
            let selected = columns.map { quoteIdentifier($0) }.joined(separator: ", ")
            let sql = SQL(
                sql: "SELECT \(selected) FROM main.\(quoteIdentifier(table)) WHERE \(ChangeLog.keyMatch(keyColumns))",
                arguments: keyValues)
            guard let row = try db.fetchOne(sql) else { continue }
            let values = try (0..<columns.count).map { try row.decode(DatabaseValue.self, at: $0) }
            // NULL refers to nothing.
            guard !values.contains(.null) else { continue }
            deleted[Self.slot(table, columns), default: []].insert(values)
        }
    }

    /// Notes the referred values of a row already deleted (an orphan the search took out), read
    /// from its values by column name before the delete. Its own children referring to them are
    /// then orphans of a deleted parent too, deleted in the search's next pass.
    func noteDeleted(_ table: String, values: [String: DatabaseValue]) {
        guard let lists = referred[table.lowercased()] else { return }
        let byLowercasedName = Dictionary(values.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        for columns in lists {
            let referredValues = columns.map { byLowercasedName[$0] ?? .null }
            guard !referredValues.contains(.null) else { continue }
            deleted[Self.slot(table, columns), default: []].insert(referredValues)
        }
    }

    /// Whether a row deleted in this batch held `values` in `columns` of `parent` (compared value
    /// for value: a child's value of another type or collation than its parent's is not matched,
    /// and waits in the stash as before).
    func contains(_ values: [DatabaseValue], in parent: String, columns: [String]) -> Bool {
        deleted[Self.slot(parent, columns.map { $0.lowercased() })]?.contains(values) ?? false
    }

    private static func slot(_ table: String, _ columns: [String]) -> String {
        ([table.lowercased()] + columns).joined(separator: "\u{0}")
    }
}
