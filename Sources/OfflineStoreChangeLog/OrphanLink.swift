import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

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
}
