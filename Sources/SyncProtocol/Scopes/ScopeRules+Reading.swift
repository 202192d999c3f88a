import Foundation

extension ScopeRules {
    /// The largest rules file read.
    public static let maximumFileBytes = 1 << 20
    /// The most tables a file may name, and filters one access of a table may have.
    public static let maximumTables = 1_000
    public static let maximumFilters = 32
    /// The deepest a file nests (a filter's `in` object sits at depth 6).
    static let maximumDepth = 8

    /// The rules in a rules file: strict JSON (Protocol/README.md, section 13) of the form
    /// `Protocol/schemas/scope-rules.json` gives. Refuses, naming the member, anything else; that
    /// the names fit a schema is ``problems(against:)``'s to check.
    ///
    /// ```swift
    /// let rules = try ScopeRules.read(from: Data(#"{"tables":{"notes":{"read":["everyone"]}}}"#.utf8))
    /// ```
    public static func read(from data: Data) throws(ScopeRuleProblem) -> ScopeRules {
        guard data.count <= maximumFileBytes else {
            throw ScopeRuleProblem("", "the file is larger than \(maximumFileBytes) bytes")
        }
        do {
            try StrictJSON.validate([UInt8](data), maximumDepth: maximumDepth)
        } catch {
            throw ScopeRuleProblem("", "the file is not strict JSON: \(error)")
        }
        guard let top = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ScopeRuleProblem("", "the file is not a JSON object")
        }
        let reader = Reader()
        try reader.members(of: top, at: "", allowed: ["$schema", "tables"])
        guard let entries = top["tables"] as? [String: Any] else {
            throw ScopeRuleProblem("tables", "missing, or not an object naming each synced table")
        }
        guard entries.count <= maximumTables else {
            throw ScopeRuleProblem("tables", "more than \(maximumTables) tables")
        }
        var tables: [String: TableRules] = [:]
        for name in entries.keys.sorted() {
            tables[name] = try reader.table(entries[name], at: "tables.\(name)")
        }
        return ScopeRules(tables: tables)
    }

    private struct Reader {
        func members(of object: [String: Any], at path: String, allowed: [String]) throws(ScopeRuleProblem) {
            if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
                throw ScopeRuleProblem(
                    path, "unknown member \"\(unknown)\" (allowed: \(allowed.joined(separator: ", ")))")
            }
        }

        func name(_ value: Any?, at path: String) throws(ScopeRuleProblem) -> String {
            guard let text = value as? String, !text.isEmpty, text.utf8.count <= 256 else {
                throw ScopeRuleProblem(path, "must be a table or column name (1 to 256 bytes of text)")
            }
            return text
        }

        func names(_ value: Any?, at path: String) throws(ScopeRuleProblem) -> [String] {
            guard let array = value as? [Any], !array.isEmpty else {
                throw ScopeRuleProblem(path, "must be a non-empty array of column names")
            }
            var names: [String] = []
            for (index, element) in array.enumerated() {
                let name = try name(element, at: "\(path)[\(index)]")
                guard !names.contains(name) else {
                    throw ScopeRuleProblem("\(path)[\(index)]", "\(name) is named twice")
                }
                names.append(name)
            }
            return names
        }

        func table(_ value: Any?, at path: String) throws(ScopeRuleProblem) -> TableRules {
            guard let object = value as? [String: Any] else {
                throw ScopeRuleProblem(path, "must be an object with the table's read (and write) filters")
            }
            try members(of: object, at: path, allowed: ["read", "write", "writableColumns"])
            guard object["read"] != nil else {
                throw ScopeRuleProblem(
                    "\(path).read", "missing: every synced table needs read filters (\"everyone\" shares it with all)")
            }
            let read = try filters(object["read"], at: "\(path).read")
            guard !read.isEmpty else {
                throw ScopeRuleProblem("\(path).read", "empty: a table no one may read cannot be synced")
            }
            return TableRules(
                read: read,
                write: try object["write"].map { value throws(ScopeRuleProblem) in
                    try filters(value, at: "\(path).write")
                } ?? [],
                writableColumns: try object["writableColumns"].map { value throws(ScopeRuleProblem) in
                    try names(value, at: "\(path).writableColumns")
                })
        }

        func filters(_ value: Any?, at path: String) throws(ScopeRuleProblem) -> [RowFilter] {
            guard let array = value as? [Any] else { throw ScopeRuleProblem(path, "must be an array of filters") }
            guard array.count <= ScopeRules.maximumFilters else {
                throw ScopeRuleProblem(path, "more than \(ScopeRules.maximumFilters) filters")
            }
            var filters: [RowFilter] = []
            for (index, element) in array.enumerated() {
                let filter = try self.filter(element, at: "\(path)[\(index)]")
                guard !filters.contains(filter) else {
                    throw ScopeRuleProblem("\(path)[\(index)]", "the same filter is given twice")
                }
                filters.append(filter)
            }
            return filters
        }

        func filter(_ value: Any, at path: String) throws(ScopeRuleProblem) -> RowFilter {
            if let word = value as? String {
                guard word == "everyone" else {
                    throw ScopeRuleProblem(path, "the only filter given as a string is \"everyone\"")
                }
                return .everyone
            }
            guard let object = value as? [String: Any] else {
                throw ScopeRuleProblem(
                    path, "must be \"everyone\" or an object with column and equals, column and in, or parent")
            }
            if object["parent"] != nil {
                try members(of: object, at: path, allowed: ["parent", "columns"])
                return .parent(
                    table: try name(object["parent"], at: "\(path).parent"),
                    columns: try object["columns"].map { value throws(ScopeRuleProblem) in
                        try names(value, at: "\(path).columns")
                    } ?? [])
            }
            let column = try name(object["column"], at: "\(path).column")
            if object["equals"] != nil {
                try members(of: object, at: path, allowed: ["column", "equals"])
                return .equals(column: column, to: try identityValue(object["equals"], at: "\(path).equals"))
            }
            guard let membership = object["in"] else {
                throw ScopeRuleProblem(path, "a filter on column \(column) needs equals or in")
            }
            try members(of: object, at: path, allowed: ["column", "in"])
            guard let inner = membership as? [String: Any] else {
                throw ScopeRuleProblem("\(path).in", "must be an object with table, select and where")
            }
            try members(of: inner, at: "\(path).in", allowed: ["table", "select", "where", "equals"])
            return .member(
                column: column,
                of: Membership(
                    table: try name(inner["table"], at: "\(path).in.table"),
                    selectColumn: try name(inner["select"], at: "\(path).in.select"),
                    whereColumn: try name(inner["where"], at: "\(path).in.where"),
                    equals: try inner["equals"].map { value throws(ScopeRuleProblem) in
                        try identityValue(value, at: "\(path).in.equals")
                    } ?? .subject))
        }

        func identityValue(_ value: Any?, at path: String) throws(ScopeRuleProblem) -> IdentityValue {
            if let word = value as? String, word == "subject" { return .subject }
            if let object = value as? [String: Any], object.count == 1, let claim = object["claim"] as? String,
                !claim.isEmpty
            {
                return .claim(claim)
            }
            throw ScopeRuleProblem(path, "must be \"subject\" or {\"claim\": NAME}")
        }
    }
}
