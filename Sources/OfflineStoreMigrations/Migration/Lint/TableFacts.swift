/// What the linter knows about one table after the statements it has seen so far in a script or stage.
struct TableFacts {
    /// Where the table's rows come from.
    enum Origin {
        /// It holds the rows the environment knows under this name (its original name, before any rename).
        case environment(String)
        /// Dropped or renamed away: there is no such table.
        case absent
        /// Created by the script; empty until something is inserted (or when created by `AS SELECT`).
        case created(isEmpty: Bool)
    }

    var origin: Origin
    /// A TEMP table: it vanishes with the connection and is never synced.
    var isTemporary = false
    /// Its rows were copied into another table (`INSERT INTO new SELECT ... FROM it`), as a rebuild does.
    var isCopied = false

    /// The table's row count: 0 when absent or created empty, nil when unknown.
    func rowCount(in environment: any LintEnvironment) -> Int? {
        switch origin {
        case .environment(let name): environment.rowCount(ofTable: name)
        case .absent: 0
        case .created(let isEmpty): isEmpty ? 0 : nil
        }
    }

    /// Whether the table is synced: never for TEMP or absent tables, unknown for tables the script created.
    func isSynced(in environment: any LintEnvironment) -> Bool? {
        if isTemporary { return false }
        switch origin {
        case .environment(let name): return environment.isSynced(table: name)
        case .absent: return false
        case .created: return nil
        }
    }
}
