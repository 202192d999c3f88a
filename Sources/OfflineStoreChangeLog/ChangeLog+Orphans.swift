import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// How the connection's foreign keys stand while a batch applies (``ChangeLog/withoutForeignKeyActions(_:_:)``).
enum ForeignKeyMode {
    /// The connection enforces keys and the batch runs inside the caller's transaction, where the
    /// pragma cannot change: SQLite's deferred check at that transaction's `COMMIT` is the proof.
    case enforced
    /// The connection enforces keys; they are off for the batch (so no `ON DELETE` action changes
    /// rows behind the log) and the apply proves the batch's rows itself.
    case suspended
    /// The connection does not enforce keys: nothing checked the app's own writes either.
    case notEnforced
}

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
    /// Foreign keys off while a batch applies (outside a transaction, where SQLite honours the
    /// pragma): their actions (`ON DELETE CASCADE`) would otherwise delete or change rows without
    /// a trace in the log, e.g. the tags of a reminder taken out while it waits for its list, which
    /// then never come back. ``resolveOrphans(after:foreignKeys:_:outcome:links:deletedParents:)`` does their work by
    /// the sync rules and proves none is left. Inside a caller's transaction the pragma cannot
    /// change; keys stay as they are. See <https://www.sqlite.org/foreignkeys.html#fk_enable>.
    func withoutForeignKeyActions<Result>(_ db: Database, _ body: (_ foreignKeys: ForeignKeyMode) throws -> Result)
        throws -> Result
    {
        guard try db.fetchValue(Bool.self, "PRAGMA foreign_keys") == true else { return try body(.notEnforced) }
        guard !db.isInsideTransaction else { return try body(.enforced) }
        try db.execute("PRAGMA foreign_keys = OFF")
        defer { try? db.execute("PRAGMA foreign_keys = ON") }
        return try body(.suspended)
    }

    /// Resolves the orphans a batch of `changes` (already applied in this transaction) can have
    /// left, and, with keys suspended, proves none is left (see the extension's documentation).
    /// `links` are the schema's (``OrphanLink/declared(in:)``); `deletedParents` what the batch's
    /// deletes took out of columns a key refers to other than the parent's key.
    func resolveOrphans(
        after changes: [RemoteChange], foreignKeys: ForeignKeyMode, _ db: Database, outcome: inout ApplyOutcome,
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

    /// Whether the app has triggers of its own (in `main` or TEMP; the store's `ostore_` ones
    /// aside) on one of `tables` (lowercased names): they fire while a batch writes them, and may
    /// write any row. A trigger fires only through a write to its own table, so one on a table
    /// the batch does not write never fires; once one counts, the whole search covers whatever
    /// chain it starts. See <https://www.sqlite.org/schematab.html>.
    static func hasAppTriggers(on tables: Set<String>, _ db: Database) throws -> Bool {
        guard !tables.isEmpty else { return false }
        let names = tables.sorted()
        let list = Array(repeating: "(?)", count: names.count).joined(separator: ", ")
        let unlogged = LogCoverage.unloggedTable + "_"
        let tracker = ChangeTracker.triggerPrefix
        let sql = SQL(
            sql: """
                WITH written(name) AS (VALUES \(list))
                SELECT EXISTS (
                    SELECT 1 FROM main.sqlite_schema WHERE type = 'trigger'
                        AND tbl_name COLLATE NOCASE IN (SELECT name FROM written)
                        AND substr(name, 1, \(unlogged.count)) <> ?
                    UNION ALL
                    SELECT 1 FROM temp.sqlite_schema WHERE type = 'trigger'
                        AND tbl_name COLLATE NOCASE IN (SELECT name FROM written)
                        AND substr(name, 1, \(tracker.count)) <> ?)
                """, arguments: names.map { .text($0) } + [.text(unlogged), .text(tracker)])
        return try db.fetchValue(Bool.self, sql) ?? true
    }

    /// The TEMP table whose presence on a connection asks its next batch for the whole search
    /// (``markWholeOrphanSearch(_:)``).
    static let wholeOrphanSearchMark = "ostore_whole_orphan_search"

    /// Asks the connection's next applied batch to search every child table whole and run
    /// `foreign_key_check`, once: ``reconcileCoverage(_:forceRescan:)`` found rows written outside
    /// the store (the `sqlite3` shell, with keys off), which nothing proved and which may be
    /// orphans no batch's rows lead to. The mark is a TEMP table, so it lasts as long as the
    /// connection (the metadatabase has no place for it without a new version of its layout): a
    /// process that ends before applying a batch after the reconciliation forgets it, and such an
    /// orphan then stays until a migration's `foreign_key_check` reports it. Writes outside the
    /// store to tables that do not sync are not noted at all (see ``LogCoverage``).
    static func markWholeOrphanSearch(_ db: Database) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS \(quoteIdentifier(wholeOrphanSearchMark)) (unused)")
    }

    private static func isWholeOrphanSearchMarked(_ db: Database) throws -> Bool {
        try db.fetchValue(
            Bool.self,
            "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = \(wholeOrphanSearchMark))"
        ) ?? false
    }

    /// Whether the log knows a deletion of the row `key` of the table `tableID`, the key compared
    /// with `collation` when one is given (a NOCASE key: a scan of the table's entries, for an
    /// orphan only).
    private func isDeleted(_ tableID: Int, _ key: DatabaseValue, collation: String?, _ db: Database) throws -> Bool {
        guard let collation else { return try version(tableID, key, "-", db) != nil }
        return try db.fetchValue(
            Bool.self,
            SQL(
                sql: "SELECT EXISTS (SELECT 1 FROM ostore_meta.ostore_changes WHERE tableID = ? AND columnName = '-' "
                    + "AND pk = ? COLLATE \(quoteIdentifier(collation)))",
                arguments: [.integer(Int64(tableID)), key])) ?? false
    }

    /// Whether a foreign key of a table in `main` has an action (`CASCADE`, `SET NULL`,
    /// `SET DEFAULT`): with keys enforced it changes rows no change names, and a cascaded delete's
    /// own children are then found by no search of the batch's rows.
    /// See <https://www.sqlite.org/foreignkeys.html#fk_actions>.
    private static func hasForeignKeyActions(_ db: Database) throws -> Bool {
        try db.fetchValue(
            Bool.self,
            """
            SELECT EXISTS (
                SELECT 1 FROM main.sqlite_schema AS m JOIN pragma_foreign_key_list(m.name, 'main') AS f
                WHERE m.type = 'table' AND (f.on_delete NOT IN ('NO ACTION', 'RESTRICT')
                    OR f.on_update NOT IN ('NO ACTION', 'RESTRICT')))
            """) ?? true
    }

    static func orphanLeft(in table: String) -> ChangeLogError {
        ChangeLogError(
            .invalidChange, table: table,
            "a row is left without its parent after applying a batch; nothing of the batch was applied")
    }

    /// Takes an orphan out: deleted by a new local delete when its parent's deletion is known,
    /// stashed with its values until the parent arrives otherwise. Returns whether the row went;
    /// throws for a key holding NULL (a composite key of a rowid table may), which no `=` matches.
    fileprivate func resolve(
        orphan childKey: [DatabaseValue], parentKey: [DatabaseValue], of link: OrphanLink, _ db: Database,
        deletedParents: DeletedParentValues, outcome: inout ApplyOutcome
    ) throws -> Bool {
        let row = try db.fetchOne(Self.rowSQL("SELECT * FROM", link.child, link.childKey, childKey, set: [:]))
        try db.execute(Self.rowSQL("DELETE FROM", link.child, link.childKey, childKey, set: [:]))
        guard db.changesCount > 0 else {
            // Gone already (an ON DELETE CASCADE of an orphan taken out before it); or, with a
            // NULL in its key, out of reach: every pass would find it again, for ever.
            guard !childKey.contains(.null) else {
                throw ChangeLogError(
                    .invalidChange, table: link.child,
                    "a row without its parent cannot be taken out by its key (a key column holds NULL); "
                        + "give the row a key without NULL or delete it, then apply again")
            }
            return false
        }
        let parentID = try trackedTableID(link.parent, db)
        let childID = try trackedTableID(link.child, db)
        let parentIsDeleted: Bool
        if let places = link.parentKeyPlaces {
            // The parent's logged key has its key's order, which the foreign key's columns may not.
            var logged = parentKey
            for (index, place) in places.enumerated() { logged[place] = parentKey[index] }
            parentIsDeleted = try isDeleted(parentID, Self.loggedKey(logged), collation: link.parentKeyCollation, db)
        } else {
            // A key that refers to other columns than the parent's key: the batch's deletes noted
            // the values they took out of them. The log knows only keys, and a deleted key equal
            // to the referred value is another row's (deleting the child for it would lose it on
            // every site).
            parentIsDeleted = deletedParents.contains(parentKey, in: link.parent, columns: link.parentColumns)
        }
        if parentIsDeleted {
            // A new local delete, newer than anything this store has seen: dated by the parent's
            // deletion, it could be older than the child's creation and lose on other sites,
            // which keep the child (moved meanwhile to a live parent) while this one has dropped
            // it for good.
            try recordVersion(childID, Self.loggedKey(childKey), "-", clock.now(), 0, db)
            // Its own children by a unique column of it are orphans of a deleted parent too.
            if let row { deletedParents.noteDeleted(link.child, values: try row.valuesByColumnName()) }
            outcome.applied += 1
        } else if let row {
            let values = try row.valuesByColumnName()
            let created = try version(childID, Self.loggedKey(childKey), "", db) ?? .oldest
            try stash(
                RemoteChange(
                    table: link.child, primaryKey: Dictionary(uniqueKeysWithValues: zip(link.childKey, childKey)),
                    operation: .insert, columns: values, clock: ChangeClock(packed: created.clock) ?? .zero,
                    siteID: created.site.isEmpty ? identity.siteID : created.site),
                reason: "parent row in \(link.parent) not present yet", db)
            // The row's versions stay: it comes back as it was, and a change older than one of
            // its columns, arriving meanwhile, stays superseded.
            outcome.stashed += 1
        }
        return true
    }
}

/// A foreign key as the orphan search reads it: child and parent tables by their declared names.
struct OrphanLink {
    var child: String
    /// The child table's key columns (``ChangeTracker/keyColumns(of:)``); empty for a table that
    /// does not sync (only the proof reads those, and needs no key).
    var childKey: [String]
    var columns: [String]
    var parent: String
    var parentColumns: [String]
    /// For each parent column, its place in the parent's key; nil when the key refers to other
    /// columns than exactly the parent's key.
    var parentKeyPlaces: [Int]?
    /// The collation of a one-column parent key that compares with another than BINARY
    /// (`NOCASE`): a child's 'abc' refers to the parent 'ABC', whose deletion the log keeps under
    /// 'ABC', so the deletion is looked up with that collation.
    var parentKeyCollation: String?
    /// Whether a deleted parent's children are found by its key's values, and a written row's
    /// parent by the value its change carried: only when the key refers to the parent's key
    /// (``parentKeyPlaces``) and each child column has its parent column's declared affinity, and
    /// both BINARY collation. SQLite compares a child's value with the parent's affinity and collation;
    /// a lookup from the child's side (`c.x IN (…)`) applies the child's, which can find another
    /// set of rows (INTEGER 1 against TEXT '01'). Otherwise the child table is searched whole.
    /// See <https://www.sqlite.org/datatype3.html#type_affinity>.
    var childrenByKey = false
    /// Whether the child table is STRICT (see ``suspects(among:_:)``).
    var childIsStrict = false

    init(
        child: String, childKey: [String], columns: [String], parent: String, parentColumns: [String],
        _ schema: SchemaSnapshot
    ) {
        self.child = child
        childIsStrict = schema.table(named: child)?.options.contains(.strict) ?? false
        self.childKey = childKey
        self.columns = columns
        self.parent = schema.table(named: parent)?.name ?? parent
        self.parentColumns = parentColumns
        parentKeyPlaces = nil
        guard let parentTable = schema.table(named: parent), parentTable.sync == .synced else { return }
        let key = ChangeTracker.keyColumns(of: parentTable).map { $0.lowercased() }
        let referred = parentColumns.isEmpty ? key : parentColumns.map { $0.lowercased() }
        let places = referred.compactMap { key.firstIndex(of: $0) }
        let collations = referred.map { name in
            parentTable.columns.first { $0.name.lowercased() == name }?.collation.map { $0.uppercased() } ?? "BINARY"
        }
        guard places.count == key.count, Set(places).count == key.count else { return }
        parentKeyPlaces = places
        if collations.count == 1, collations[0] != "BINARY" { parentKeyCollation = collations[0] }
        if parentColumns.isEmpty { self.parentColumns = ChangeTracker.keyColumns(of: parentTable) }
        guard collations.allSatisfy({ $0 == "BINARY" }), let childTable = schema.table(named: child),
            self.parentColumns.count == columns.count
        else { return }
        childrenByKey = zip(columns, self.parentColumns).allSatisfy { childName, parentName in
            guard let childColumn = childTable.columns.first(where: { $0.name.lowercased() == childName.lowercased() }),
                let parentColumn = parentTable.columns.first(where: { $0.name.lowercased() == parentName.lowercased() })
            else { return false }
            return childColumn.collation.map { $0.uppercased() == "BINARY" } ?? true
                && Self.affinity(childColumn.type, strict: childIsStrict)
                    == Self.affinity(parentColumn.type, strict: parentTable.options.contains(.strict))
        }
    }

    /// A declared type's affinity, by SQLite's rules (in a STRICT table `ANY` has none).
    /// See <https://www.sqlite.org/datatype3.html#determination_of_column_affinity>.
    private static func affinity(_ type: ColumnType, strict: Bool) -> String {
        let name = type.rawValue
        if strict, name == "ANY" { return "BLOB" }
        if name.contains("INT") { return "INTEGER" }
        if ["CHAR", "CLOB", "TEXT"].contains(where: name.contains) { return "TEXT" }
        if name.isEmpty || name.contains("BLOB") { return "BLOB" }
        if ["REAL", "FLOA", "DOUB"].contains(where: name.contains) { return "REAL" }
        return "NUMERIC"
    }

    /// The foreign keys the schema declares on its synced tables, in the schema's order.
    static func declared(in schema: SchemaSnapshot) -> [OrphanLink] {
        schema.tables.filter { $0.sync == .synced }.flatMap { table in
            let key = ChangeTracker.keyColumns(of: table)
            return (table.foreignKeys + table.columns.compactMap(\.reference)).compactMap { foreignKey in
                // A parent this schema does not declare cannot be told deleted from not arrived.
                schema.table(named: foreignKey.parentTable) == nil
                    ? nil
                    : OrphanLink(
                        child: table.name, childKey: key, columns: foreignKey.columns, parent: foreignKey.parentTable,
                        parentColumns: foreignKey.parentColumns, schema)
            }
        }
    }

    /// Every foreign key of every table in `main`, as SQLite reads the live schema.
    /// See <https://www.sqlite.org/pragma.html#pragma_foreign_key_list>.
    static func live(_ db: Database, schema: SchemaSnapshot) throws -> [OrphanLink] {
        let rows = try db.fetchAll(
            """
            SELECT m.name, f.id, f."table", f."from", f."to" FROM main.sqlite_schema AS m
            JOIN pragma_foreign_key_list(m.name, 'main') AS f
            WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq
            """)
        var links: [OrphanLink] = []
        var last: (table: String, id: Int)?
        var parts: (parent: String, columns: [String], parentColumns: [String]) = ("", [], [])
        func flush() throws {
            guard let last else { return }
            if parts.parentColumns.isEmpty {
                // No parent columns named: the parent's primary key.
                parts.parentColumns = try db.fetchAll(
                    String.self, "SELECT name FROM pragma_table_info(\(parts.parent), 'main') WHERE pk > 0 ORDER BY pk")
            }
            let table = schema.table(named: last.table)
            let key = table.flatMap { $0.sync == .synced ? ChangeTracker.keyColumns(of: $0) : nil } ?? []
            links.append(
                OrphanLink(
                    child: table?.name ?? last.table, childKey: key, columns: parts.columns, parent: parts.parent,
                    parentColumns: parts.parentColumns, schema))
        }
        for row in rows {
            let table = try row.decode(String.self, at: 0)
            let id = try row.decode(Int.self, at: 1)
            if last.map({ $0.table != table || $0.id != id }) ?? true {
                try flush()
                last = (table, id)
                parts = (try row.decode(String.self, at: 2), [], [])
            }
            parts.columns.append(try row.decode(String.self, at: 3))
            if let to = try row.decode(String?.self, at: 4) { parts.parentColumns.append(to) }
        }
        try flush()
        return links
    }

    /// Whether the parent's columns are known, one per child column. SQLite reports none for a
    /// missing parent table or one whose key is the implicit rowid, and a key may name another
    /// number of columns than the parent's key has ("foreign key mismatch" to SQLite): no search
    /// can be written for those, and `foreign_key_check` of the child table decides.
    var hasParentColumns: Bool { !parentColumns.isEmpty && parentColumns.count == columns.count }

    /// Whether both are the same foreign key (names compared as SQLite compares them).
    func isSameKey(as other: OrphanLink) -> Bool {
        func lowered(_ names: [String]) -> [String] { names.map { $0.lowercased() } }
        return child.lowercased() == other.child.lowercased() && parent.lowercased() == other.parent.lowercased()
            && lowered(columns) == lowered(other.columns) && lowered(parentColumns) == lowered(other.parentColumns)
    }

    /// `NOT EXISTS` the row's parent; the parent's columns on the left, so its collation and
    /// affinity compare, as SQLite's own check does (`+` takes the child column's affinity off,
    /// which would otherwise convert a TEXT parent's '01' to the child's INTEGER 1); the parent's
    /// index is still searched.
    private var parentMissing: String {
        let match = zip(columns, parentColumns).map { "p.\(quoteIdentifier($1)) = +c.\(quoteIdentifier($0))" }
        return
            "NOT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(parent)) AS p WHERE \(match.joined(separator: " AND ")))"
    }

    private var allSet: String { columns.map { "c.\(quoteIdentifier($0)) IS NOT NULL" }.joined(separator: " AND ") }

    /// The orphans (child key values, then foreign key values) among `rows`; with `first`, at most one.
    func orphans(_ rows: Candidates, _ db: Database, first: Bool = false) throws -> [[DatabaseValue]] {
        // No column to compare with: the proof (or `foreign_key_check`, or SQLite's COMMIT) decides.
        guard hasParentColumns else { return [] }
        let selected =
            first
            ? "1"
            : (childKey.map { "c.\(quoteIdentifier($0))" } + columns.map { "c.\(quoteIdentifier($0))" })
                .joined(separator: ", ")
        let child = "main.\(quoteIdentifier(child)) AS c"
        let limit = first ? " LIMIT 1" : ""
        var found: [[DatabaseValue]] = []
        func run(_ sql: SQL) throws -> Bool {
            found += try Self.rows(sql, db)
            return first && !found.isEmpty
        }
        switch rows {
        case .whole:
            _ = try run(SQL(sql: "SELECT \(selected) FROM \(child) WHERE \(allSet) AND \(parentMissing)\(limit)"))
        case .written(let keys):
            // Each row by its key: one search of the child's key index per row.
            let on = childKey.enumerated().map { "c.\(quoteIdentifier($1)) = k.column\($0 + 1)" }
            for chunk in Self.chunks(keys, width: childKey.count) {
                let sql = SQL(
                    sql: "SELECT \(selected) FROM (\(Self.values(chunk.count, width: childKey.count))) AS k "
                        + "CROSS JOIN \(child) ON \(on.joined(separator: " AND ")) WHERE \(allSet) AND \(parentMissing)"
                        + limit, arguments: chunk.flatMap { $0 })
                if try run(sql) { break }
            }
        case .childrenOf(let parentKeys):
            // The deleted parents' keys as one bound list: SQLite searches the child's index on
            // its foreign key columns for each, or scans the child once without one. A key of
            // several columns joins the list (a row value `IN` would scan the child table).
            guard childrenByKey, let places = parentKeyPlaces else { break }
            let on = columns.enumerated().map { "c.\(quoteIdentifier($1)) = k.column\($0 + 1)" }.joined(
                separator: " AND ")
            for chunk in Self.chunks(parentKeys.map { key in places.map { key[$0] } }, width: columns.count) {
                let list = Self.values(chunk.count, width: columns.count)
                let sql = SQL(
                    sql: columns.count == 1
                        ? "SELECT \(selected) FROM \(child) WHERE c.\(quoteIdentifier(columns[0])) IN (\(list)) "
                            + "AND \(parentMissing)\(limit)"
                        : "SELECT \(selected) FROM (\(list)) AS k CROSS JOIN \(child) ON \(on) "
                            + "WHERE \(parentMissing)\(limit)",
                    arguments: chunk.flatMap { $0 })
                if try run(sql) { break }
            }
        }
        return found
    }

    /// The written rows that can be orphans by this key, whose rows are then read. For a key of
    /// one column in a STRICT table (which stores a value as the change carries it), the value a
    /// row ends with is one a change of the batch set it to, or the one it had before the batch
    /// (whose parent was present then, and is searched for if deleted since): so only the rows
    /// whose change set a value whose parent is missing, and the inserts that set none (a default),
    /// are suspects, and the parents are looked up once per distinct value instead of reading
    /// every row. Otherwise every written row is (last-writer-wins per column can leave a
    /// composite key with a pair of values no single change carried).
    func suspects(among rows: ArraySlice<WrittenRow>, _ db: Database) throws -> [[DatabaseValue]] {
        guard columns.count == 1, childIsStrict, childrenByKey else { return rows.map(\.key) }
        // The distinct values first; the rows of a value without a parent (rare) after.
        var values: Set<DatabaseValue> = []
        var suspects: [[DatabaseValue]] = []
        for row in rows {
            if let value = row.value(of: columns[0]) {
                if value != .null { values.insert(value) }
            } else if row.change.operation == .insert {
                suspects.append(row.key)
            }
        }
        guard !values.isEmpty else { return suspects }
        var missing: Set<DatabaseValue> = []
        let match = "p.\(quoteIdentifier(parentColumns[0])) = k.column1"
        for chunk in Self.chunks(values.map { [$0] }, width: 1) {
            let rows = try Self.rows(
                SQL(
                    sql: "SELECT k.column1 FROM (\(Self.values(chunk.count, width: 1))) AS k WHERE NOT EXISTS "
                        + "(SELECT 1 FROM main.\(quoteIdentifier(parent)) AS p WHERE \(match))",
                    arguments: chunk.flatMap { $0 }), db)
            for row in rows { missing.insert(row[0]) }
        }
        guard !missing.isEmpty else { return suspects }
        for row in rows {
            if let value = row.value(of: columns[0]), missing.contains(value) { suspects.append(row.key) }
        }
        return suspects
    }

    /// Rows to search among.
    enum Candidates {
        case whole
        /// Child rows by their key values.
        case written([[DatabaseValue]])
        /// The children of parent rows by the parent's key values (in its key's order).
        case childrenOf([[DatabaseValue]])
    }

    /// The rows of a query, their values in order. Not kept in the connection's statement cache:
    /// the texts vary with the number of rows bound, and a cached statement of each size would
    /// stay for the connection's life.
    private static func rows(_ sql: SQL, _ db: Database) throws -> [[DatabaseValue]] {
        let statement = try db.makeStatement(sql.text)
        try statement.bind(StatementArguments(sql.arguments))
        return try RowCursor(statement: statement, arguments: sql.arguments).toArray().map { row in
            try (0..<row.count).map { try row.decode(DatabaseValue.self, at: $0) }
        }
    }

    /// At most 1,000 rows and 30,000 bound values per statement (SQLite's default limit is 32,766).
    private static func chunks(_ rows: [[DatabaseValue]], width: Int) -> [ArraySlice<[DatabaseValue]>] {
        let size = max(1, min(1_000, 30_000 / max(width, 1)))
        return stride(from: 0, to: rows.count, by: size).map { rows[$0..<min($0 + size, rows.count)] }
    }

    /// `VALUES (?, ?), (?, ?), …`: `count` rows of `width` parameters.
    private static func values(_ count: Int, width: Int) -> String {
        let row = "(" + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
        return "VALUES " + Array(repeating: row, count: count).joined(separator: ", ")
    }
}

/// A row a change of the batch wrote (or may have: the change may have lost to a newer one).
struct WrittenRow {
    /// The row's key, in its table's key order.
    var key: [DatabaseValue]
    var change: RemoteChange

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
    init(_ changes: [RemoteChange], schema: SchemaSnapshot, tables: Set<String>) {
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

/// The search's passes: each link looks at the rows written to its child table and at the
/// children of its parent table's deleted rows that it has not looked at yet, and takes out the
/// orphans it finds (which adds them to the deleted rows). It goes round until a pass finds none,
/// as a deleted orphan orphans its own children, in any table, in the same pass or the next.
struct OrphanSearch {
    let links: [OrphanLink]
    private(set) var rows: TouchedRows
    /// Searching every child table whole (a connection that does not enforce keys).
    let whole: Bool
    /// Per link, how many of its child's written rows and its parent's deleted rows it has seen.
    private var seenWritten: [Int]
    private var seenDeleted: [Int]
    private var passes = 0

    /// What the batch's deletes took out of columns a key refers to other than the parent's key.
    let deletedParents: DeletedParentValues

    init(links: [OrphanLink], rows: TouchedRows, whole: Bool, deletedParents: DeletedParentValues) {
        self.deletedParents = deletedParents
        self.links = links
        self.rows = rows
        self.whole = whole
        seenWritten = Array(repeating: 0, count: links.count)
        seenDeleted = Array(repeating: 0, count: links.count)
    }

    /// One pass over every link; whether it found an orphan.
    mutating func pass(_ log: ChangeLog, _ db: Database, outcome: inout ApplyOutcome) throws -> Bool {
        var found = false
        for (index, link) in links.enumerated() {
            var orphans: [[DatabaseValue]] = []
            if whole {
                orphans = try link.orphans(.whole, db)
            } else {
                let written = rows.written[link.child.lowercased()] ?? []
                let deleted = rows.deleted[link.parent.lowercased()] ?? []
                if seenWritten[index] < written.count {
                    let suspects = try link.suspects(among: written[seenWritten[index]...], db)
                    if !suspects.isEmpty { orphans += try link.orphans(.written(suspects), db) }
                }
                if !link.childrenByKey {
                    // Rows written to the parent (its referred columns updated) count at the first pass.
                    let parentWritten = passes == 0 && rows.written[link.parent.lowercased()] != nil
                    if parentWritten || seenDeleted[index] < deleted.count { orphans += try link.orphans(.whole, db) }
                } else if seenDeleted[index] < deleted.count {
                    orphans += try link.orphans(.childrenOf(Array(deleted[seenDeleted[index]...])), db)
                }
                (seenWritten[index], seenDeleted[index]) = (written.count, deleted.count)
            }
            var taken: Set<[DatabaseValue]> = []
            for orphan in orphans {
                let childKey = Array(orphan[..<link.childKey.count])
                guard taken.insert(childKey).inserted else { continue }
                found = true
                guard
                    try log.resolve(
                        orphan: childKey, parentKey: Array(orphan[link.childKey.count...]), of: link, db,
                        deletedParents: deletedParents, outcome: &outcome)
                else { continue }
                rows.noteDeleted(link.child, childKey)
            }
        }
        passes += 1
        return found
    }
}
