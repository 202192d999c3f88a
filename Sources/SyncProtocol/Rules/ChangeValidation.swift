/// The checks a server applies to every change of a push before storing any of them; the first
/// failure refuses the whole batch with its index.
///
/// ```swift
/// if let problem = ChangeValidation.problem(in: change, batchSite: push.site, limits: .standard, now: now) {
///     throw ErrorBody(problem.code, "change \(index): \(problem.message)", changeIndex: index)
/// }
/// ```
public enum ChangeValidation {
    public struct Problem: Sendable, Hashable {
        public var code: ErrorCode
        public var message: String
    }

    /// A table or column name: an ASCII letter or underscore, then ASCII letters, digits and
    /// underscores, at most `maximumLength` long. Quotes, spaces, dots and semicolons never pass,
    /// so a name can never carry SQL.
    public static func isPlainIdentifier(_ name: String, maximumLength: Int = Limits.standard.maxIdentifierLength)
        -> Bool
    {
        // ASCII only, so bytes are scalars; a native string's bytes are read in place, cheaper than
        // `allSatisfy` over the UTF-8 view (the client asks this of every name of every pulled change).
        var name = name
        return name.withUTF8 { bytes in
            guard let first = bytes.first, bytes.count <= maximumLength, isLetterOrUnderscore(first) else {
                return false
            }
            for byte in bytes where !isLetterOrUnderscore(byte) && !(48...57).contains(byte) { return false }
            return true
        }
    }

    @inline(__always)
    private static func isLetterOrUnderscore(_ byte: UInt8) -> Bool {
        byte == 95 || (65...90).contains(byte) || (97...122).contains(byte)
    }

    /// The first rule `change` breaks, or nil. `now` is the server's clock in milliseconds.
    public static func problem(in change: Change, batchSite: SiteID, limits: Limits, now: Int64) -> Problem? {
        if isPlainlyValid(change, batchSite: batchSite, limits: limits, now: now) { return nil }
        return firstProblem(in: change, batchSite: batchSite, limits: limits, now: now)
    }

    /// Every rule in order, for the message naming the first one broken.
    static func firstProblem(in change: Change, batchSite: SiteID, limits: Limits, now: Int64) -> Problem? {
        let names = [change.table] + change.key.keys.sorted() + change.columns.keys.sorted()
        if let odd = names.first(where: { !isPlainIdentifier($0, maximumLength: limits.maxIdentifierLength) }) {
            return Problem(
                code: .invalidChange,
                message: "\(String(odd.prefix(64)).debugDescription) is not a plain identifier "
                    + "(ASCII letters, digits and underscores, not starting with a digit, at most "
                    + "\(limits.maxIdentifierLength) long)")
        }
        // SQLite compares names without regard to ASCII case, so "id" and "ID" are one column: a
        // change naming one twice would be applied by whichever a receiver happened to meet first.
        for (part, names) in [("key", change.key.keys), ("columns", change.columns.keys)] {
            var seen: Set<String> = []
            if let twice = names.sorted().first(where: { !seen.insert($0.lowercased()).inserted }) {
                return Problem(
                    code: .invalidChange, message: "\(part) names column \(twice) twice (names ignore ASCII case)")
            }
        }
        if change.key.isEmpty {
            return Problem(code: .invalidChange, message: "the key names no column")
        }
        if change.key.values.contains(.null) {
            return Problem(code: .invalidChange, message: "a key column is null")
        }
        for name in change.key.keys.sorted() {
            guard let repeated = change.columns.first(where: { $0.key.lowercased() == name.lowercased() }) else {
                continue
            }
            // An insert carries the whole row, key columns included, and they must say what the key
            // says; an update or delete never changes a key column.
            guard change.op == .insert else {
                return Problem(
                    code: .invalidChange,
                    message: "key column \(name) is also a changed column of an \(change.op.rawValue)")
            }
            guard repeated.value == change.key[name] else {
                return Problem(
                    code: .invalidChange, message: "column \(repeated.key) of the insert differs from its key value")
            }
        }
        switch change.op {
        case .delete where !change.columns.isEmpty:
            return Problem(code: .invalidChange, message: "a delete carries no columns")
        case .update where change.columns.isEmpty:
            return Problem(code: .invalidChange, message: "an update names at least one column")
        default: break
        }
        if change.site != batchSite {
            return Problem(
                code: .invalidChange, message: "the change's site \(change.site) is not the batch's site \(batchSite)")
        }
        if change.seq < 1 || change.seq > (1 << 53) - 1 {
            return Problem(code: .invalidChange, message: "seq \(change.seq) is outside 1…2^53-1")
        }
        if change.clock.milliseconds > now + limits.maxClockDriftMilliseconds {
            return Problem(
                code: .clockOutOfRange,
                message: "clock \(change.clock) is \(change.clock.milliseconds - now) ms ahead of the server "
                    + "(at most \(limits.maxClockDriftMilliseconds) ms allowed); check the device's clock")
        }
        return nil
    }

    /// Every check of a push the server makes before storing anything: the batch size, each
    /// change (``problem(in:batchSite:limits:now:)``), and `seq` strictly growing along the batch.
    /// Throws the error the server answers with; `changeIndex` names the first offending change.
    public static func validate(_ push: PushRequest, limits: Limits, now: Int64) throws(ErrorBody) {
        guard push.changes.count <= limits.maxChangesPerPush else {
            throw ErrorBody(
                .tooManyChanges,
                "\(push.changes.count) changes in one push; at most \(limits.maxChangesPerPush) are accepted")
        }
        var previous: Int64?
        for (index, change) in push.changes.enumerated() {
            if let problem = problem(in: change, batchSite: push.site, limits: limits, now: now) {
                throw ErrorBody(problem.code, "change \(index): \(problem.message)", changeIndex: index)
            }
            if let previous, change.seq <= previous {
                throw ErrorBody(
                    .invalidChange,
                    "change \(index): seq \(change.seq) does not grow (the change before has \(previous))",
                    changeIndex: index)
            }
            previous = change.seq
        }
    }
}
