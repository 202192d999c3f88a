/// Rules made ready to decide scopes under one schema: checked against it, with each parent
/// filter's foreign key found. What both server backends and the tests' oracle decide scopes with,
/// so that they decide alike.
///
/// ```swift
/// let evaluator = try ScopeEvaluator(rules, definition: definition)
/// let granted = evaluator.grantedBuckets(.read, to: bob) { membership, member in
///     listIDs(of: member)  // the values of membership.selectColumn in its rows for this member
/// }
/// ```
public struct ScopeEvaluator: Sendable {
    public let rules: ScopeRules

    /// A filter with what deciding it needs.
    enum Filter: Sendable {
        case everyone
        case equals(column: String, bucketKind: String)
        case member(column: String, bucketKind: String)
        /// The parent's key columns paired with the child's columns holding them.
        case parent(table: String, key: [(parentColumn: String, column: String)])
    }

    private let filters: [ScopeRules.Access: [String: [Filter]]]

    /// Throws every problem ``ScopeRules/problems(against:)`` finds, in one error.
    public init(_ rules: ScopeRules, definition: SchemaDefinition) throws(ScopeRulesRefused) {
        let problems = rules.problems(against: definition)
        guard problems.isEmpty else { throw ScopeRulesRefused(problems: problems) }
        self.rules = rules
        var filters: [ScopeRules.Access: [String: [Filter]]] = [:]
        for access in ScopeRules.Access.allCases {
            for (name, table) in rules.tables {
                // The check found every table and every parent's foreign key.
                let declared = definition.tables.first { $0.name == name }!
                filters[access, default: [:]][name] = table.filters(access).map { filter in
                    switch filter {
                    case .everyone:
                        return .everyone
                    case .equals(let column, let value):
                        return .equals(column: column, bucketKind: ScopeBucket.kind(of: value))
                    case .member(let column, let membership):
                        return .member(column: column, bucketKind: ScopeBucket.kind(of: membership))
                    case .parent(let parent, let columns):
                        let key = ScopeRules.parentKey(of: declared, parent: parent, columns: columns)!
                        return .parent(
                            table: parent, key: Array(zip(key.parentColumns, key.columns)).map { ($0, $1) })
                    }
                }
            }
        }
        self.filters = filters
    }

    /// The buckets a row of `table` whose columns hold `values` is in for `access`: none for a
    /// table the rules do not name. `parentBuckets` gives the buckets of the parent row of
    /// `table` (for `access`) whose key is the values given, nil when there is no such row.
    public func buckets(
        _ access: ScopeRules.Access, of table: String, values: (String) -> WireValue?,
        parentBuckets: (_ table: String, _ key: [String: WireValue]) -> Set<ScopeBucket>?
    ) -> Set<ScopeBucket> {
        var buckets: Set<ScopeBucket> = []
        for filter in filters[access]?[table] ?? [] {
            switch filter {
            case .everyone:
                buckets.insert(.everyone)
            case .equals(let column, let kind), .member(let column, let kind):
                if let value = values(column).flatMap(ScopeBucket.valueText) {
                    buckets.insert(ScopeBucket(kind: kind, value: value))
                }
            case .parent(let parent, let key):
                var parentKey: [String: WireValue] = [:]
                for (parentColumn, column) in key {
                    guard let value = values(column), value != .null else { break }
                    parentKey[parentColumn] = value
                }
                guard parentKey.count == key.count else { continue }
                buckets.formUnion(parentBuckets(parent, parentKey) ?? [])
            }
        }
        return buckets
    }

    /// The buckets `identity` may `access`; none for an identity without a subject, which stands
    /// outside scopes (``ScopeIdentity``). `membershipValues` gives the values of a membership's
    /// select column in its table's live rows whose where column holds `member`.
    public func grantedBuckets(
        _ access: ScopeRules.Access, to identity: ScopeIdentity,
        membershipValues: (_ membership: ScopeRules.Membership, _ member: String) -> [WireValue]
    ) -> Set<ScopeBucket> {
        guard identity.subject != nil else { return [] }
        var buckets: Set<ScopeBucket> = []
        for table in rules.tables.values {
            for filter in table.filters(access) {
                switch filter {
                case .everyone:
                    buckets.insert(.everyone)
                case .equals(_, let value):
                    if let text = identity.text(of: value) {
                        buckets.insert(
                            ScopeBucket(kind: ScopeBucket.kind(of: value), value: ScopeBucket.valueText(.text(text))!))
                    }
                case .member(_, let membership):
                    guard let member = identity.text(of: membership.equals) else { continue }
                    let kind = ScopeBucket.kind(of: membership)
                    for value in membershipValues(membership, member) {
                        if let text = ScopeBucket.valueText(value) {
                            buckets.insert(ScopeBucket(kind: kind, value: text))
                        }
                    }
                case .parent:
                    break
                }
            }
        }
        return buckets
    }
}

/// Rules that cannot be served under a schema: every problem found (``ScopeRules/problems(against:)``).
public struct ScopeRulesRefused: Error, Sendable, Hashable, CustomStringConvertible {
    public var problems: [ScopeRuleProblem]

    public init(problems: [ScopeRuleProblem]) {
        self.problems = problems
    }

    public var description: String {
        "the rules do not fit the schema:\n" + problems.map { "- \($0)" }.joined(separator: "\n")
    }
}
