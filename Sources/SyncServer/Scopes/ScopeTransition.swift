import SyncProtocol

/// A row of a dataset, by table and the canonical JSON of its key.
struct ScopedRow: Hashable, Sendable, Comparable {
    var table: String
    var key: String

    static func < (left: ScopedRow, right: ScopedRow) -> Bool { (left.table, left.key) < (right.table, right.key) }
}

/// What a storage answers about its scope index at scope positions (``ScopePosition``), for
/// ``ScopeTransition``; each backend's queries, one algorithm.
protocol ScopeIndexReading {
    /// The position the index stands at: after the newest change it holds, or after the rules set
    /// since.
    func end() throws -> Int64
    /// The rules the index follows at `position`; nil before any were set.
    func rules(at position: Int64) throws -> StoredScopeRules?
    /// The buckets membership rows grant to `member` as `kind` at `position`.
    func grantedValues(kind: String, member: String, at position: Int64) throws -> Set<String>
    /// Every row a link to one of `buckets` makes readable at `position`, with the rows that
    /// share a scope with them as their children, and theirs.
    func rows(reachedFrom buckets: Set<ScopeBucket>, at position: Int64) throws -> Set<ScopedRow>
    /// The rows whose links changed after `from` through `to`.
    func rowsRelinked(after from: Int64, through to: Int64) throws -> Set<ScopedRow>
    /// The rows linked to one of `buckets`, and every row below `rows` and them through parent
    /// links, by the links standing at `from` or at `to`.
    func rows(linkedTo buckets: Set<ScopeBucket>, below rows: Set<ScopedRow>, at from: Int64, or to: Int64) throws
        -> Set<ScopedRow>
    /// `row`'s links standing at `position`.
    func links(of row: ScopedRow, at position: Int64) throws -> Set<RowScope.Link>
}

/// How a subject's read scope moves from one position to another: the rows that come into it
/// (a device receives their whole state), those that leave it (a device removes them), and
/// whether a row changed in between stayed in it (a device receives its changes). Exact at
/// every position the index's history holds, for any pair of them.
///
/// ```swift
/// let transition = try ScopeTransition(index, identity: bob, from: cursorPosition, to: foldedPosition)
/// ```
///
/// It holds no connection: the pages of one move reuse it (``ScopeTransitionCache``), since what
/// the index holds at two positions never changes.
struct ScopeTransition: Sendable {
    private(set) var entering: [ScopedRow] = []
    private(set) var leaving: [ScopedRow] = []
    /// Rows whose changes between the positions are sent; all others in scope at `to` and at `from` too.
    private var decided: [ScopedRow: Bool] = [:]
    private var memoTo: [ScopedRow: Bool] = [:]
    /// Every row readable at `to`, once asking row by row would cost more (``rowByRowLimit``).
    private var scopeTo: Set<ScopedRow>?
    /// How many rows ``receivesChanges(of:in:)`` decided by walking up from them.
    private var walkedUp = 0
    private let to: Int64
    private let grantedTo: Set<ScopeBucket>

    /// Up to this many rows are decided by walking up from each (a few index reads per row);
    /// beyond it, by the whole scope read at each position (one read of the index each, as a first
    /// download reads it), which costs about as much as a few hundred walks.
    static let rowByRowLimit = 256

    /// The move of `identity`'s scope from `from` (nil: from nothing, a first download) to `to`.
    init(_ index: any ScopeIndexReading, identity: ScopeIdentity, from: Int64?, to: Int64) throws {
        self.to = to
        guard let rulesTo = try index.rules(at: to) else {
            grantedTo = []
            return
        }
        grantedTo = try Self.granted(index, rulesTo.evaluator, identity, at: to)
        guard let from else {
            entering = Self.parentsFirst(try index.rows(reachedFrom: grantedTo, at: to), rulesTo.evaluator)
            return
        }
        let rulesFrom = try index.rules(at: from)
        let grantedFrom =
            try rulesFrom.map { rules in try Self.granted(index, rules.evaluator, identity, at: from) } ?? []
        let candidates: Set<ScopedRow>
        // Either end's whole scope, when the rows to decide are many (or, after a change of rules,
        // are those scopes); nil: each row is decided by walking up from it.
        var scopeFrom: Set<ScopedRow>?
        if rulesFrom?.version != rulesTo.version {
            let before = try index.rows(reachedFrom: grantedFrom, at: from)
            let after = try index.rows(reachedFrom: grantedTo, at: to)
            (scopeFrom, scopeTo, candidates) = (before, after, before.union(after))
        } else {
            let relinked = try index.rowsRelinked(after: from, through: to)
            candidates = relinked.union(
                try index.rows(
                    linkedTo: grantedFrom.symmetricDifference(grantedTo), below: relinked, at: from, or: to))
            if candidates.count > Self.rowByRowLimit {
                scopeFrom = try index.rows(reachedFrom: grantedFrom, at: from)
                scopeTo = try index.rows(reachedFrom: grantedTo, at: to)
            }
        }
        var memoFrom: [ScopedRow: Bool] = [:]
        var entering: Set<ScopedRow> = []
        var leaving: Set<ScopedRow> = []
        for row in candidates {
            let before =
                try scopeFrom?.contains(row) ?? Self.readable(row, index, grantedFrom, at: from, memo: &memoFrom)
            let after = try scopeTo?.contains(row) ?? Self.readable(row, index, grantedTo, at: to, memo: &memoTo)
            if after && !before { entering.insert(row) }
            if before && !after { leaving.insert(row) }
            decided[row] = before && after
        }
        self.entering = Self.parentsFirst(entering, rulesTo.evaluator)
        self.leaving = Self.parentsFirst(leaving, rulesTo.evaluator).reversed()
    }

    /// `rows` with parent tables' rows before their children's (by the schema's foreign keys),
    /// then by table and key: the order a device applies rows that come in, and the reverse of the
    /// one it removes rows in, without a row waiting for its parent or outliving it.
    private static func parentsFirst(_ rows: Set<ScopedRow>, _ evaluator: ScopeEvaluator) -> [ScopedRow] {
        rows.sorted { left, right in
            let (l, r) = (evaluator.depths[left.table] ?? 0, evaluator.depths[right.table] ?? 0)
            return l != r ? l < r : left < right
        }
    }

    /// Whether the changes of `row` made between the two positions are the subject's to receive:
    /// it was in scope at both (rows that came in are sent whole instead). `index`: the index the
    /// transition was made from, as any read of it gives it.
    mutating func receivesChanges(of row: ScopedRow, in index: any ScopeIndexReading) throws -> Bool {
        if let decided = decided[row] { return decided }
        if scopeTo == nil, walkedUp >= Self.rowByRowLimit { scopeTo = try index.rows(reachedFrom: grantedTo, at: to) }
        if let scopeTo { return scopeTo.contains(row) }
        walkedUp += 1
        return try Self.readable(row, index, grantedTo, at: to, memo: &memoTo)
    }

    private static func granted(
        _ index: any ScopeIndexReading, _ evaluator: ScopeEvaluator, _ identity: ScopeIdentity, at position: Int64
    ) throws -> Set<ScopeBucket> {
        var buckets = evaluator.fixedBuckets(.read, for: identity)
        guard identity.subject != nil else { return buckets }
        for membership in evaluator.memberships(.read) {
            guard let member = identity.text(of: membership.equals) else { continue }
            let kind = ScopeBucket.kind(of: membership)
            for value in try index.grantedValues(kind: kind, member: member, at: position) {
                buckets.insert(ScopeBucket(kind: kind, value: value))
            }
        }
        return buckets
    }

    /// Whether `row` is readable at `position` by links to `granted`: its own, or its parent's.
    private static func readable(
        _ row: ScopedRow, _ index: any ScopeIndexReading, _ granted: Set<ScopeBucket>, at position: Int64,
        memo: inout [ScopedRow: Bool]
    ) throws -> Bool {
        if let known = memo[row] { return known }
        // A row is in no circle of parents (the rules allow none), so the walk ends.
        memo[row] = false
        var found = false
        for link in try index.links(of: row, at: position) {
            if link.kind == "b" {
                found = granted.contains(ScopeBucket(kind: link.a, value: link.b))
            } else {
                found = try readable(
                    ScopedRow(table: link.a, key: link.b), index, granted, at: position, memo: &memo)
            }
            if found { break }
        }
        memo[row] = found
        return found
    }
}
