import OfflineStoreSQLite

extension SchemaSnapshot {
    /// Reads the tables of a live database's `main` schema into the same model a declaration
    /// builds, so declared and live schemas compare column by column and index by index.
    ///
    /// Tables whose names start with `sqlite_` (SQLite's) and `ostore_` (the migrator's ledger and
    /// other internal tables) are left out unless `includingReservedTables`; so are FTS5 shadow tables.
    /// It reads `PRAGMA table_list`, `table_xinfo`, `index_list`, `index_xinfo` and
    /// `foreign_key_list`, and the stored `CREATE` statements for what no pragma reports (CHECK
    /// constraints, column collations, AUTOINCREMENT, partial-index conditions).
    /// See <https://www.sqlite.org/pragma.html#pragfunc>.
    public init(liveDatabase db: Database, includingReservedTables: Bool = false) throws {
        let listed = try db.fetchAll(
            """
            SELECT t.name, t.type, t.wr, t.strict, s.sql
            FROM pragma_table_list AS t JOIN main.sqlite_schema AS s ON s.name = t.name AND s.type = 'table'
            WHERE t.schema = 'main' AND t.type IN ('table', 'virtual') AND t.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
            ORDER BY t.name
            """)
        var tables: [TableDefinition] = []
        for row in listed {
            let name: String = try row.decode(at: 0)
            if !includingReservedTables, Self.isBookkeepingTable(name) { continue }
            let type: String = try row.decode(at: 1)
            let sql: String = try row.decode(String?.self, at: 4) ?? ""
            if type == "virtual" {
                tables.append(Self.virtualTable(name: name, sql: sql))
            } else {
                var options: TableOptions = []
                if try row.decode(Bool.self, at: 2) { options.insert(.withoutRowID) }
                if try row.decode(Bool.self, at: 3) { options.insert(.strict) }
                tables.append(try Self.ordinaryTable(name: name, sql: sql, options: options, in: db))
            }
        }
        self.init(liveTables: tables)
    }

    /// The migrator's and the store's own tables in an app's database, which no declaration lists.
    static func isBookkeepingTable(_ name: String) -> Bool {
        let key = name.lowercased()
        return [
            "ostore_migrations", "ostore_migration_state", "ostore_migration_plan", "ostore_store_identity",
            "ostore_unlogged", "ostore_log_watermark", "ostore_stage_changes",
        ].contains(key) || key.hasPrefix("ostore_rebuild_")
    }

    private static func virtualTable(name: String, sql: String) -> TableDefinition {
        let tokens = SQLScanner.tokens(sql)
        guard let using = tokens.firstIndex(where: { $0.isKeyword("USING") }), using + 1 < tokens.count,
            tokens[using + 1].identifier.lowercased() == "fts5"
        else {
            var other = TableDefinition(sql: sql, sync: .localOnly)
            other.name = name
            return other
        }
        var columns: [String] = []
        var unindexed: [String] = []
        var options: [FTS5Option] = []
        var orderedColumns: [String] = []
        for argument in SQLScanner.parenthesisedItems(Array(tokens[(using + 2)...])) {
            let parts = Array(argument)
            guard let first = parts.first else { continue }
            if !parts.contains(where: { $0.text == "=" }) { orderedColumns.append(first.identifier) }
            if let equals = parts.firstIndex(where: { $0.text == "=" }) {
                let valueTokens = parts[(equals + 1)...]
                let value =
                    valueTokens.count == 1 && valueTokens.first?.kind == .string
                    ? String(valueTokens.first!.text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")
                    : SQLScanner.normalized(valueTokens)
                options.append(FTS5Option(name: first.identifier.lowercased(), value: value))
            } else if parts.contains(where: { $0.isKeyword("UNINDEXED") }) {
                unindexed.append(first.identifier)
            } else {
                columns.append(first.identifier)
            }
        }
        var table = TableDefinition(fts5: name, columns: columns, unindexed: unindexed, options: options)
        // Keep the stored column order, which FTS5 queries by column index depend on.
        table.columns = orderedColumns.map { Column($0, ColumnType(rawValue: "")) }
        return table
    }

    private static func ordinaryTable(name: String, sql: String, options: TableOptions, in db: Database) throws
        -> TableDefinition
    {
        var table = TableDefinition(name, sync: .localOnly, options: options) {}
        let parsed = ParsedCreateTable(sql: sql)
        let columnRows = try db.fetchAll(
            "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(\(name), 'main') ORDER BY cid"
        )
        var keyPositions: [(position: Int, name: String)] = []
        for row in columnRows {
            let columnName: String = try row.decode(at: 0)
            let hidden: Int = try row.decode(at: 5)
            guard hidden != 1 else { continue }
            var type = ColumnType(rawValue: try row.decode(String?.self, at: 1) ?? "")
            if hidden == 2 || hidden == 3 { type = ColumnType(rawValue: type.rawValue + " GENERATED") }
            var column = Column(columnName, type)
            column.isNotNull = try row.decode(at: 2)
            if let defaultSQL = try row.decode(String?.self, at: 3) { column.defaultValue = .expression(defaultSQL) }
            column.collation = parsed.collations[columnName.lowercased()]
            let position: Int = try row.decode(at: 4)
            if position > 0 { keyPositions.append((position, columnName)) }
            table.columns.append(column)
        }
        keyPositions.sort { $0.position < $1.position }
        if keyPositions.count == 1, let index = table.columns.firstIndex(where: { $0.name == keyPositions[0].name }) {
            table.columns[index].isPrimaryKey = true
            table.columns[index].isAutoincrement = parsed.hasAutoincrement
        } else {
            table.primaryKey = keyPositions.map(\.name)
        }
        table.checks = parsed.checks

        let indexRows = try db.fetchAll(
            "SELECT name, \"unique\", origin, partial FROM pragma_index_list(\(name), 'main') ORDER BY name")
        for row in indexRows {
            let indexName: String = try row.decode(at: 0)
            let origin: String = try row.decode(at: 2)
            let keyRows = try db.fetchAll(
                "SELECT name, desc, coll FROM pragma_index_xinfo(\(indexName), 'main') WHERE key = 1 ORDER BY seqno")
            var keyColumns: [IndexedColumn] = []
            for keyRow in keyRows {
                let columnName = try keyRow.decode(String?.self, at: 0) ?? "(expression)"
                let collation = (try keyRow.decode(String?.self, at: 2) ?? "BINARY").uppercased()
                let columnCollation =
                    table.columns.first { $0.name.lowercased() == columnName.lowercased() }?.collation ?? "BINARY"
                keyColumns.append(
                    IndexedColumn(
                        columnName, descending: try keyRow.decode(Bool.self, at: 1),
                        collation: collation == columnCollation ? nil : collation))
            }
            switch origin {
            case "u": table.uniqueConstraints.append(keyColumns.map(\.name))
            case "c":
                let indexSQL = try db.fetchValue(
                    String.self, "SELECT sql FROM main.sqlite_schema WHERE type = 'index' AND name = \(indexName)")
                table.indexes.append(
                    Index(
                        indexName, columns: keyColumns, unique: try row.decode(Bool.self, at: 1),
                        where: try row.decode(Bool.self, at: 3) ? indexSQL.flatMap(Self.partialIndexCondition) : nil))
            default: break  // "pk": the primary key of a WITHOUT ROWID table or a non-INTEGER key.
            }
        }

        let foreignKeyRows = try db.fetchAll(
            """
            SELECT id, "table", "from", "to", on_delete, on_update
            FROM pragma_foreign_key_list(\(name), 'main') ORDER BY id, seq
            """)
        var foreignKeysByID: [(id: Int, key: ForeignKeyDefinition, implicitParentKey: Bool)] = []
        for row in foreignKeyRows {
            let id: Int = try row.decode(at: 0)
            let from: String = try row.decode(at: 2)
            let to: String? = try row.decode(at: 3)
            if let last = foreignKeysByID.last, last.id == id {
                foreignKeysByID[foreignKeysByID.count - 1].key.columns.append(from)
                if let to { foreignKeysByID[foreignKeysByID.count - 1].key.parentColumns.append(to) }
            } else {
                foreignKeysByID.append(
                    (
                        id,
                        ForeignKeyDefinition(
                            columns: [from], parentTable: try row.decode(at: 1), parentColumns: to.map { [$0] } ?? [],
                            onDelete: ForeignKeyAction(rawValue: try row.decode(at: 4)) ?? .noAction,
                            onUpdate: ForeignKeyAction(rawValue: try row.decode(at: 5)) ?? .noAction),
                        to == nil
                    ))
            }
        }
        for entry in foreignKeysByID {
            var key = entry.key
            if entry.implicitParentKey {
                // `REFERENCES parent` without columns means the parent's primary key.
                key.parentColumns = try db.fetchAll(
                    String.self,
                    "SELECT name FROM pragma_table_info(\(key.parentTable), 'main') WHERE pk > 0 ORDER BY pk")
            }
            table.foreignKeys.append(key)
        }
        // The pragmas list foreign keys newest first; keep declaration order.
        table.foreignKeys.reverse()
        return table
    }

    private static func partialIndexCondition(_ sql: String) -> String? {
        let tokens = SQLScanner.tokens(sql)
        var depth = 0
        for (index, token) in tokens.enumerated() {
            if token.text == "(" { depth += 1 }
            if token.text == ")" { depth -= 1 }
            if depth == 0, token.isKeyword("WHERE") { return SQLScanner.normalized(tokens[(index + 1)...]) }
        }
        return nil
    }
}

/// What the stored `CREATE TABLE` statement says that no pragma reports.
struct ParsedCreateTable {
    var collations: [String: String] = [:]
    var checks: [String] = []
    var hasAutoincrement = false

    init(sql: String) {
        let tokens = SQLScanner.tokens(sql)
        let constraintKeywords: Set<String> = ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]
        for item in SQLScanner.parenthesisedItems(tokens) {
            guard let first = item.first else { continue }
            checks += SQLScanner.checkExpressions(in: item)
            if first.kind == .word, constraintKeywords.contains(first.upper) { continue }
            let parts = Array(item)
            var index = 1
            var depth = 0
            while index < parts.count {
                if parts[index].text == "(" { depth += 1 }
                if parts[index].text == ")" { depth -= 1 }
                if depth == 0, parts[index].isKeyword("COLLATE"), index + 1 < parts.count {
                    collations[first.identifier.lowercased()] = parts[index + 1].identifier.uppercased()
                }
                if parts[index].isKeyword("AUTOINCREMENT") { hasAutoincrement = true }
                index += 1
            }
        }
    }
}
