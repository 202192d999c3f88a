/// The tables a query read or a transaction wrote, by name as SQLite compares them (in lower
/// case, whatever schema they are in), or every table: what a statement prepared before access
/// was recorded may have touched, a schema change, a commit of another connection.
///
/// ```swift
/// let read = DatabaseRegion(tables: ["reminders"])
/// read.intersects(DatabaseRegion(tables: ["Reminders", "tags"]))  // true
/// ```
public struct DatabaseRegion: Sendable, Hashable, CustomStringConvertible {
    /// Nil: every table.
    public private(set) var tables: Set<String>?

    /// No table.
    public static let empty = DatabaseRegion(tables: [])
    /// Every table.
    public static let everything = DatabaseRegion(allTables: ())

    /// The region of these tables, named in any case.
    public init(tables: Set<String>) { self.tables = Set(tables.map { $0.lowercased() }) }

    private init(allTables: ()) { tables = nil }

    /// Whether the region holds no table.
    public var isEmpty: Bool { tables?.isEmpty ?? false }
    /// Whether the region is every table.
    public var isEverything: Bool { tables == nil }

    /// Whether a change of `other` may change what this region holds.
    public func intersects(_ other: DatabaseRegion) -> Bool {
        guard let tables, let others = other.tables else { return !isEmpty && !other.isEmpty }
        return !tables.isDisjoint(with: others)
    }

    /// Adds `other`'s tables (every table when either is).
    public mutating func formUnion(_ other: DatabaseRegion) {
        guard let tables, let others = other.tables else {
            self.tables = nil
            return
        }
        self.tables = tables.union(others)
    }

    /// Adds one table, named as SQLite reports it.
    mutating func insert(table: String) { tables?.insert(table.lowercased()) }

    /// The tables, sorted, or "every table" / "no table".
    public var description: String {
        guard let tables else { return "every table" }
        return tables.isEmpty ? "no table" : tables.sorted().joined(separator: ", ")
    }
}
