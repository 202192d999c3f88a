import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// Orphans, the foreign keys' work done by the sync rules: a child left pointing at a parent that
/// was deleted is deleted by a new local delete; a child whose parent never arrived waits in the
/// stash, with its versions, until it does.
///
/// Why looking at the batch's rows is enough (the invariant is "no orphan at commit"):
/// - Before the batch no orphan exists. With keys enforced on the connection (``ForeignKeyMode/enforced``,
///   ``ForeignKeyMode/suspended``), every write the app committed on it was checked by SQLite,
///   immediately or at its `COMMIT`; a migration runs `foreign_key_check` before its own `COMMIT`
///   (``Migrator``); every earlier batch, and every retry of the stash (``ChangeLog/applyStash(_:)``,
///   which applies through the same path), proved its own rows as below. Rows written with keys
///   off (the `sqlite3` shell, an app that turned them off for a while) are outside what SQLite
///   itself enforces and outside this proof; when the store notices writes of another program
///   (``ChangeLog/reconcileCoverage(_:forceRescan:)``) the connection's next batch searches whole
///   (``ChangeLog/markWholeOrphanSearch(_:)``, which says what that does not cover); a connection
///   that does not enforce keys at all (``ForeignKeyMode/notEnforced``) keeps the whole-database
///   search and `foreign_key_check`.
/// - The batch writes rows only through its changes (unless the app has triggers of its own on a
///   table the batch writes, which may write any row, or, inside the caller's transaction, a key
///   has an `ON DELETE`/`ON UPDATE` action: then every child table is searched whole, and checked
///   by `foreign_key_check`, as before): an insert or update of the change's own row
///   (which may set its foreign key columns), a delete of the change's own row, and the deletes
///   below. A row that was not an orphan becomes one only if its foreign key columns are written
///   (it is among the written rows) or its parent goes: deleted (among the deleted rows), or, for
///   a key that refers to other columns than the parent's key, those columns updated. A key's
///   columns never change (the apply does not update them).
/// So the search looks at (a) the rows the batch's inserts and updates name, in child tables,
/// whose parent is missing (for a one-column key of a STRICT table, only the rows whose change set
/// a value no parent has, see ``OrphanLink/suspects(among:_:)``), and (b) the children of the rows its deletes name and of the rows the
/// search itself deletes (a deleted orphan orphans its own children), through the child's foreign
/// key columns, a bound list of the deleted keys per statement (one index search per key, or one
/// scan of the child table when it has no index on them). A key referring to other columns than
/// the parent's key, comparing them with a collation other than BINARY, or whose columns have
/// another affinity than the parent's (``OrphanLink/childrenByKey``), is searched over the
/// whole child table when its parent table had rows written or deleted (rare; exact). The
/// batch's changes name a superset of the rows actually written (a superseded change wrote
/// nothing), which costs a lookup, never a wrong answer: every search reads the rows as they are.
///
/// The proof (``ForeignKeyMode/suspended``), in place of a `foreign_key_check` of the whole
/// database: SQLite's own definitions of every table's foreign keys (`pragma_foreign_key_list`,
/// tables that do not sync included) are read; for those the schema declares, the search's last
/// pass finding nothing is the proof (see ``ChangeLog/resolveOrphans(after:foreignKeys:_:outcome:links:deletedParents:)``);
/// for any other (a table that does not sync, a key the declaration lacks) the same search over
/// the same rows must find nothing.
/// See <https://www.sqlite.org/foreignkeys.html> and <https://www.sqlite.org/pragma.html#pragfunc>.
extension ChangeLog {
    /// Resolves the orphans a batch of `changes` (already applied in this transaction) can have
    /// left, and, with keys suspended, proves none is left (see the extension's documentation).
    /// `links` are the schema's (``OrphanLink/declared(in:)``); `deletedParents` what the batch's
    /// deletes took out of columns a key refers to other than the parent's key.
    func resolveOrphans(
        after changes: [IncomingChange], foreignKeys: ForeignKeyMode, _ db: Database, outcome: inout ApplyOutcome,
        links: [OrphanLink], deletedParents: DeletedParentValues
    ) throws {
        // The tables the batch writes: those its changes name, and the child tables the search
        // takes orphans out of.
        var written = Set(links.map { $0.child.lowercased() })
        // A batch's changes come in runs of one table: each run's name is lowercased and hashed
        // once, not once per change.
        var lastTable: String?
        for change in changes where change.table != lastTable {
            lastTable = change.table
            written.insert(change.table.lowercased())
        }
        let markedWhole = try Self.isWholeOrphanSearchMarked(db)
        // Nothing proved the app's own writes (or another program's, just noticed), or an app's
        // trigger, or a key's `ON DELETE` / `ON UPDATE` action in force inside the caller's
        // transaction, may have written rows no change names: every child table, whole, as
        // SQLite would see it.
        guard foreignKeys != .notEnforced, !markedWhole, try !Self.hasAppTriggers(on: written, db),
            try foreignKeys != .enforced || !Self.hasForeignKeyActions(db)
        else {
            var search = OrphanSearch(links: links, rows: TouchedRows(), whole: true, deletedParents: deletedParents)
            while try search.pass(self, db, outcome: &outcome) {}
            if foreignKeys != .enforced, let violation = try db.fetchOne("PRAGMA foreign_key_check") {
                throw Self.orphanLeft(in: try violation.decode(String.self, at: 0))
            }
            // Dropped in the batch's transaction: a batch that fails leaves the mark for the next.
            if markedWhole { try db.execute(sql: "DROP TABLE temp.\(quoteIdentifier(Self.wholeOrphanSearchMark))") }
            return
        }
        let proofLinks = foreignKeys == .suspended ? try OrphanLink.live(db, schema: schema) : []
        // Only tables on either side of a foreign key matter; a schema without one skips it all.
        let tables = Set((links + proofLinks).flatMap { [$0.child.lowercased(), $0.parent.lowercased()] })
        guard !tables.isEmpty else { return }
        var search = OrphanSearch(
            links: links, rows: TouchedRows(changes, schema: schema, tables: tables), whole: false,
            deletedParents: deletedParents)
        while try search.pass(self, db, outcome: &outcome) {}
        // The search proved its own keys: its last pass found no orphan among the rows it had
        // not looked at, and a row it looked at before can only have become one through a
        // deletion since, which it looked at too. The rest are proved here.
        // A declared key the search cannot write SQL for (see ``OrphanLink/hasParentColumns``) is
        // proved by SQLite's own check.
        try search.rows.prove(
            proofLinks.filter { live in !links.contains { $0.isSameKey(as: live) } }
                + links.filter { !$0.hasParentColumns }, db)
    }

    static func orphanLeft(in table: String) -> ChangeLogError {
        ChangeLogError(
            .invalidChange, table: table,
            "a row is left without its parent after applying a batch; nothing of the batch was applied")
    }
}
