import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// A row a change of the batch wrote (or may have: the change may have lost to a newer one).
struct WrittenRow {
    /// The row's key, in its table's key order.
    var key: [DatabaseValue]
    var change: IncomingChange

    /// The value the change carries for `column` (named as SQLite compares names), nil when it
    /// carries none.
    func value(of column: String) -> DatabaseValue? {
        change.columns[column] ?? change.columns.first { $0.key.lowercased() == column.lowercased() }?.value
    }
}

/// The rows of synced tables a batch wrote (inserts, updates) and took out (deletes, and the
/// orphans the search removed), by lowercased table name, keys in the table's key order. Each
/// list grows only; a key listed twice costs a second lookup, not a wrong answer.
struct TouchedRows {
    private(set) var written: [String: [WrittenRow]] = [:]
    private(set) var deleted: [String: [[DatabaseValue]]] = [:]

    init() {}

    /// The rows the changes name in `tables` (lowercased names; see ``OrphanLink`` for why a
    /// superset is enough). A change whose key does not fit its table wrote nothing (it was refused).
    init(_ changes: [IncomingChange], schema: SchemaSnapshot, tables: Set<String>) {
        var keyColumns: [String: (name: String, columns: [String]?)] = [:]
        // A page's changes are mostly of one table, one after the other: a run of them is
        // collected apart and added to the table's lists when the table changes.
        var run: (table: String, name: String, columns: [String]?, written: [WrittenRow], deleted: [[DatabaseValue]])?
        func endRun() {
            guard let run else { return }
            if !run.written.isEmpty { written[run.name, default: []] += run.written }
            if !run.deleted.isEmpty { deleted[run.name, default: []] += run.deleted }
        }
        for change in changes {
            if run?.table != change.table {
                endRun()
                let known =
                    keyColumns[change.table]
                    ?? {
                        let name = change.table.lowercased()
                        let table = tables.contains(name) ? schema.table(named: name) : nil
                        let known = (
                            name, table.flatMap { $0.sync == .synced ? ChangeTracker.keyColumns(of: $0) : nil }
                        )
                        keyColumns[change.table] = known
                        return known
                    }()
                run = (change.table, known.name, known.columns, [], [])
            }
            guard let columns = run?.columns,
                let key = try? ChangeLog.keyValues(of: change, keyColumns: columns, table: change.table)
            else { continue }
            if change.operation == .delete {
                run?.deleted.append(key)
            } else {
                run?.written.append(WrittenRow(key: key, change: change))
            }
        }
        endRun()
    }

    mutating func noteDeleted(_ table: String, _ key: [DatabaseValue]) {
        deleted[table.lowercased(), default: []].append(key)
    }

    /// Whether `table` had rows written or deleted.
    func touched(_ table: String) -> Bool {
        let name = table.lowercased()
        return written[name] != nil || deleted[name] != nil
    }

    /// No orphan among these rows by any of `links` (the live schema's); throws naming the child
    /// table of the first found.
    func prove(_ links: [OrphanLink], _ db: Database) throws {
        for link in links {
            guard link.hasParentColumns else {
                // SQLite's own check of the child table (it names a key it cannot check).
                if touched(link.child) || touched(link.parent),
                    try db.fetchOne(SQL(sql: "PRAGMA main.foreign_key_check(\(quoteIdentifier(link.child)))")) != nil
                {
                    throw ChangeLog.orphanLeft(in: link.child)
                }
                continue
            }
            var found = false
            if !link.childKey.isEmpty, let rows = written[link.child.lowercased()] {
                found = try !link.orphans(.written(rows.map(\.key)), db, first: true).isEmpty
            }
            if !found, link.childrenByKey, let keys = deleted[link.parent.lowercased()] {
                found = try !link.orphans(.childrenOf(keys), db, first: true).isEmpty
            }
            if !found, !link.childrenByKey, touched(link.parent) {
                found = try !link.orphans(.whole, db, first: true).isEmpty
            }
            if found { throw ChangeLog.orphanLeft(in: link.child) }
        }
    }
}
