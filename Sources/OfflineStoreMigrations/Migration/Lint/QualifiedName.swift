/// A table or other schema object's name as written in a statement: `name` or `schema.name`.
struct QualifiedName: Hashable, CustomStringConvertible {
    var schema: String?
    var name: String

    /// The name as SQLite compares it: case-insensitively. The schema is left out: the linter tracks `main`.
    var key: String { name.lowercased() }

    /// In the `temp` schema, whose tables vanish with the connection and are never synced.
    var isTemporary: Bool { schema?.lowercased() == "temp" }

    /// One of SQLite's schema tables, whose rows are the schema itself.
    var isSchemaTable: Bool {
        ["sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema"].contains(key)
    }

    /// For messages: `"notes"` or `main."notes"`.
    var description: String {
        schema.map { "\($0).\"\(name)\"" } ?? "\"\(name)\""
    }
}
