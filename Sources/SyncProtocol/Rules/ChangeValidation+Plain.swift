extension ChangeValidation {
    /// True only when ``problem(in:batchSite:limits:now:)`` finds nothing, decided without the
    /// sorted name lists, lowercased copies and sets the full check builds to name the first
    /// problem (a fifth of a server's work per pushed change). False means "run the full check".
    static func isPlainlyValid(_ change: Change, batchSite: SiteID, limits: Limits, now: Int64) -> Bool {
        let maximumLength = limits.maxIdentifierLength
        guard change.site == batchSite, (1...(1 << 53) - 1).contains(change.seq),
            change.clock.milliseconds <= now + limits.maxClockDriftMilliseconds,
            !change.key.isEmpty, change.key.count <= 16, change.columns.count <= 64,
            isPlainIdentifier(change.table, maximumLength: maximumLength)
        else { return false }
        switch change.op {
        case .delete: guard change.columns.isEmpty else { return false }
        case .update: guard !change.columns.isEmpty else { return false }
        case .insert: break
        }
        let keyNames = Array(change.key.keys)
        let columnNames = Array(change.columns.keys)
        for name in keyNames + columnNames {
            guard isPlainIdentifier(name, maximumLength: maximumLength) else { return false }
        }
        guard !hasTwins(keyNames), !hasTwins(columnNames) else { return false }
        for (name, value) in change.key {
            guard value != .null else { return false }
            // A key column repeated among the columns: only by an insert, with the same value,
            // and spelt the same (a spelling in another case is left to the full check).
            if let repeated = change.columns[name], change.op != .insert || repeated != value { return false }
            if columnNames.contains(where: { $0 != name && equalIgnoringASCIICase($0, name) }) { return false }
        }
        return true
    }

    /// Whether two of `names` (plain identifiers, so ASCII) differ only in case.
    private static func hasTwins(_ names: [String]) -> Bool {
        for first in names.indices {
            for second in names.indices where second > first {
                if equalIgnoringASCIICase(names[first], names[second]) { return true }
            }
        }
        return false
    }

    private static func equalIgnoringASCIICase(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count
            && zip(lhs.utf8, rhs.utf8).allSatisfy { a, b in
                a == b || (a | 0x20 == b | 0x20 && (a | 0x20) >= 97 && (a | 0x20) <= 122)
            }
    }
}
