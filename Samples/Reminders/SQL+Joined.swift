import OfflineStore

extension SQL {
    /// Fragments joined by a separator, each keeping its bound arguments: column lists and SET
    /// clauses built from what the release's schema has.
    static func joined(_ fragments: [SQL], separator: String) -> SQL {
        var result: SQL = ""
        for (offset, fragment) in fragments.enumerated() {
            if offset > 0 { result.append(SQL(sql: separator)) }
            result.append(fragment)
        }
        return result
    }
}
