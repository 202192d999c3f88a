extension Database {
    /// The schema table of an attached database (`main`, `temp` or an ATTACH name).
    private func schemaTable(_ schema: String) -> SQL {
        schema.lowercased() == "temp"
            ? "sqlite_temp_schema" : "\(identifier: schema).sqlite_schema"
    }

    /// Names of the ordinary tables of a schema, sorted, without SQLite's internal ones.
    /// See <https://www.sqlite.org/schematab.html>.
    public func tableNames(schema: String = "main") throws -> [String] {
        try fetchAll(
            String.self,
            """
            SELECT name FROM \(schemaTable(schema))
            WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name
            """)
    }

    /// Whether a table (or view, with `includingViews`) of that name exists; names are case-insensitive.
    public func tableExists(_ name: String, schema: String = "main", includingViews: Bool = false) throws -> Bool {
        let types = includingViews ? ["table", "view"] : ["table"]
        return try fetchValue(
            Bool.self,
            """
            SELECT count(*) > 0 FROM \(schemaTable(schema))
            WHERE type IN (\(list: types)) AND name = \(name) COLLATE NOCASE
            """) ?? false
    }

    /// The columns of a table, hidden and generated ones included.
    /// Throws when the table does not exist.
    public func columns(in table: String, schema: String = "main") throws -> [ColumnInfo] {
        let rows = try fetchAll(
            "SELECT name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo(\(table), \(schema))")
        guard !rows.isEmpty else { throw noSuchTable(table, schema: schema) }
        return try rows.map { row in
            ColumnInfo(
                name: try row.decode(at: 0), declaredType: try row.decode(String?.self, at: 1) ?? "",
                isNotNull: try row.decode(at: 2), defaultValueSQL: try row.decode(at: 3),
                primaryKeyPosition: try row.decode(at: 4),
                visibility: ColumnInfo.Visibility(rawValue: try row.decode(at: 5)) ?? .normal)
        }
    }

    /// Whether a table has a column of that name (case-insensitive).
    public func columnExists(_ column: String, in table: String, schema: String = "main") throws -> Bool {
        guard try tableExists(table, schema: schema) else { return false }
        return try columns(in: table, schema: schema).contains { $0.name.lowercased() == column.lowercased() }
    }

    /// The indexes of a table with their key columns, sorted by name.
    public func indexes(on table: String, schema: String = "main") throws -> [IndexInfo] {
        guard try tableExists(table, schema: schema) else { throw noSuchTable(table, schema: schema) }
        let list = try fetchAll(
            "SELECT name, \"unique\", origin, partial FROM pragma_index_list(\(table), \(schema)) ORDER BY name")
        return try list.map { row in
            let name: String = try row.decode(at: 0)
            let columns = try fetchAll(
                """
                SELECT name FROM pragma_index_xinfo(\(name), \(schema)) WHERE key = 1 ORDER BY seqno
                """
            ).map { try $0.decode(String?.self, at: 0) }
            let sql = try fetchValue(
                String.self, "SELECT sql FROM \(schemaTable(schema)) WHERE type = 'index' AND name = \(name)")
            return IndexInfo(
                name: name, table: table, isUnique: try row.decode(at: 1),
                origin: IndexInfo.Origin(rawValue: try row.decode(at: 2)) ?? .createIndex,
                isPartial: try row.decode(at: 3), columns: columns, sql: sql)
        }
    }

    /// The foreign keys a table declares, in id order.
    public func foreignKeys(on table: String, schema: String = "main") throws -> [ForeignKeyInfo] {
        guard try tableExists(table, schema: schema) else { throw noSuchTable(table, schema: schema) }
        let rows = try fetchAll(
            """
            SELECT id, "table", "from", "to", on_update, on_delete
            FROM pragma_foreign_key_list(\(table), \(schema)) ORDER BY id, seq
            """)
        var keys: [ForeignKeyInfo] = []
        for row in rows {
            let id: Int = try row.decode(at: 0)
            let from: String = try row.decode(at: 2)
            let to: String? = try row.decode(at: 3)
            if let last = keys.last, last.id == id {
                keys[keys.count - 1] = ForeignKeyInfo(
                    id: id, destinationTable: last.destinationTable, originColumns: last.originColumns + [from],
                    destinationColumns: last.destinationColumns + [to], onUpdate: last.onUpdate,
                    onDelete: last.onDelete)
            } else {
                keys.append(
                    ForeignKeyInfo(
                        id: id, destinationTable: try row.decode(at: 1), originColumns: [from],
                        destinationColumns: [to], onUpdate: try row.decode(at: 4), onDelete: try row.decode(at: 5)))
            }
        }
        return keys
    }

    /// The triggers on a table, sorted by name.
    public func triggers(on table: String, schema: String = "main") throws -> [TriggerInfo] {
        try fetchAll(
            """
            SELECT name, tbl_name, sql FROM \(schemaTable(schema))
            WHERE type = 'trigger' AND tbl_name = \(table) COLLATE NOCASE ORDER BY name
            """
        ).map { TriggerInfo(name: try $0.decode(at: 0), table: try $0.decode(at: 1), sql: try $0.decode(at: 2)) }
    }

    private func noSuchTable(_ table: String, schema: String) -> DatabaseError {
        DatabaseError(
            resultCode: .error,
            message: "no table named '\(table)' in schema '\(schema)'; check the name or create it first")
    }
}
