import SyncProtocol

extension Change {
    /// This change as the merged state keys it, with the canonical JSON of its key: table and
    /// column names in ASCII lowercase. Names are compared without regard to ASCII case
    /// (Protocol/README.md, section 5.2), so `CaseTable`/`ID` and `casetable`/`id` are one row and
    /// `Title` and `title` one cell, on both backends; snapshots serve the names in lowercase. The
    /// log keeps each change as it was pushed. `keyText` is the canonical JSON of ``key``, kept
    /// when no name has an upper-case letter (the common case, which costs a scan of the names).
    ///
    /// ```swift
    /// let (folded, key) = try change.namedForState(key: try change.canonicalKeyJSON())
    /// ```
    func namedForState(key keyText: String) throws -> (change: Change, key: String) {
        let keyHasUpperCase = key.keys.contains(where: Self.hasUpperCase)
        guard keyHasUpperCase || Self.hasUpperCase(table) || columns.keys.contains(where: Self.hasUpperCase) else {
            return (self, keyText)
        }
        var lowered = self
        lowered.table = Self.lowercased(table)
        lowered.key = Dictionary(key.map { (Self.lowercased($0.key), $0.value) }) { first, _ in first }
        lowered.columns = Dictionary(columns.map { (Self.lowercased($0.key), $0.value) }) { first, _ in first }
        return (lowered, keyHasUpperCase ? try lowered.canonicalKeyJSON() : keyText)
    }

    /// Identifiers are ASCII (section 5.2), so only `A`–`Z` change.
    private static func hasUpperCase(_ name: String) -> Bool {
        name.utf8.contains { (65...90).contains($0) }
    }

    private static func lowercased(_ name: String) -> String {
        hasUpperCase(name)
            ? String(decoding: name.utf8.map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self) : name
    }
}
