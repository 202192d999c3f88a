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
        // Over the dictionaries' own keys: arrays of the names (and their concatenation), made
        // and released for every change, would cost more than the checks.
        for name in change.key.keys where !isPlainIdentifier(name, maximumLength: maximumLength) { return false }
        for name in change.columns.keys where !isPlainIdentifier(name, maximumLength: maximumLength) { return false }
        guard !hasTwins(change.key.keys), !hasTwins(change.columns.keys) else { return false }
        for (name, value) in change.key {
            guard value != .null else { return false }
            // A key column repeated among the columns: only by an insert, with the same value,
            // and spelt the same (a spelling in another case is left to the full check).
            if let repeated = change.columns[name], change.op != .insert || repeated != value { return false }
            if change.columns.keys.contains(where: { $0 != name && equalIgnoringASCIICase($0, name) }) { return false }
        }
        return true
    }

    /// Whether two of `names` (plain identifiers, so ASCII) differ only in case.
    private static func hasTwins(_ names: Dictionary<String, WireValue>.Keys) -> Bool {
        var first = names.startIndex
        while first != names.endIndex {
            var second = names.index(after: first)
            while second != names.endIndex {
                if equalIgnoringASCIICase(names[first], names[second]) { return true }
                second = names.index(after: second)
            }
            first = names.index(after: first)
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
