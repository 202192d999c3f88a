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
    /// ``memberships(_:)`` of each access, made once: the fold and the write check ask for them
    /// for every row.
    private let membershipsByAccess: [ScopeRules.Access: [ScopeRules.Membership]]
    /// The memberships of either access read in each table, with their bucket kinds, each once.
    private let grantingMemberships: [String: [(membership: ScopeRules.Membership, kind: String)]]
    /// Each table's depth below the tables it references by foreign key (0 for a table that
    /// references none): what orders rows so that parents come before their children.
    public let depths: [String: Int]

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
        var membershipsByAccess: [ScopeRules.Access: [ScopeRules.Membership]] = [:]
        var grantingMemberships: [String: [(membership: ScopeRules.Membership, kind: String)]] = [:]
        for access in ScopeRules.Access.allCases {
            var found: [ScopeRules.Membership] = []
            for table in rules.tables.keys.sorted() {
                for case .member(_, let membership) in rules.tables[table]!.filters(access)
                where !found.contains(membership) {
                    found.append(membership)
                }
            }
            membershipsByAccess[access] = found
            for membership in found
            where !(grantingMemberships[membership.table] ?? []).contains(where: { $0.membership == membership }) {
                grantingMemberships[membership.table, default: []].append(
                    (membership, ScopeBucket.kind(of: membership)))
            }
        }
        self.membershipsByAccess = membershipsByAccess
        self.grantingMemberships = grantingMemberships
        depths = Self.depths(of: definition)
    }

    /// The depth of each table of `definition` by its foreign keys; a table in a circle of foreign
    /// keys (or referencing itself) counts the way round once.
    private static func depths(of definition: SchemaDefinition) -> [String: Int] {
        var depths: [String: Int] = [:]
        func depth(_ name: String, visiting: Set<String>) -> Int {
            if let known = depths[name] { return known }
            guard let table = definition.tables.first(where: { $0.name == name }) else { return 0 }
            let parents = table.foreignKeys.map(\.parentTable).filter { !visiting.contains($0) && $0 != name }
            let found = parents.map { depth($0, visiting: visiting.union([name])) + 1 }.max() ?? 0
            depths[name] = found
            return found
        }
        for table in definition.tables { _ = depth(table.name, visiting: []) }
        return depths
    }

    /// What puts a row of `table` whose columns hold `values` in scopes of `access`: the buckets
    /// its own columns put it in, and the parent rows whose scopes it shares. None for a table
    /// the rules do not name.
    public func links(_ access: ScopeRules.Access, of table: String, values: (String) -> WireValue?) -> RowLinks {
        var links = RowLinks()
        for filter in filters[access]?[table] ?? [] {
            switch filter {
            case .everyone:
                links.buckets.insert(.everyone)
            case .equals(let column, let kind), .member(let column, let kind):
                if let value = values(column).flatMap(ScopeBucket.valueText) {
                    links.buckets.insert(ScopeBucket(kind: kind, value: value))
                }
            case .parent(let parent, let key):
                var parentKey: [String: WireValue] = [:]
                for (parentColumn, column) in key {
                    guard let value = values(column), value != .null else { break }
                    parentKey[parentColumn] = value
                }
                if parentKey.count == key.count { links.parents.insert(RowLinks.Parent(table: parent, key: parentKey)) }
            }
        }
        return links
    }

    /// The buckets a row of `table` whose columns hold `values` is in for `access`: its own, and
    /// those `parentBuckets` gives for each of its parent rows (nil when there is no such row).
    public func buckets(
        _ access: ScopeRules.Access, of table: String, values: (String) -> WireValue?,
        parentBuckets: (_ table: String, _ key: [String: WireValue]) -> Set<ScopeBucket>?
    ) -> Set<ScopeBucket> {
        let links = links(access, of: table, values: values)
        var buckets = links.buckets
        for parent in links.parents { buckets.formUnion(parentBuckets(parent.table, parent.key) ?? []) }
        return buckets
    }

    /// The memberships `access`'s filters read, each once.
    public func memberships(_ access: ScopeRules.Access) -> [ScopeRules.Membership] {
        membershipsByAccess[access] ?? []
    }

    /// What a live row of `table` whose columns hold `values` grants as a row of a membership of
    /// either access: for each membership of that table, the bucket its select column names, to
    /// the subjects (or claims) its where column holds as text.
    public func membershipGrants(ofRowIn table: String, values: (String) -> WireValue?) -> Set<MembershipGrant> {
        var grants: Set<MembershipGrant> = []
        for (membership, kind) in grantingMemberships[table] ?? [] {
            guard case .text(let member)? = values(membership.whereColumn),
                let value = values(membership.selectColumn).flatMap(ScopeBucket.valueText)
            else { continue }
            grants.insert(MembershipGrant(kind: kind, member: member, value: value))
        }
        return grants
    }

    /// The buckets `identity` may `access` whatever the rows hold: everyone's, and those of its
    /// subject and claims. None for an identity without a subject, which stands outside scopes
    /// (``ScopeIdentity``).
    public func fixedBuckets(_ access: ScopeRules.Access, for identity: ScopeIdentity) -> Set<ScopeBucket> {
        guard identity.subject != nil else { return [] }
        var buckets: Set<ScopeBucket> = []
        for table in rules.tables.values {
            for filter in table.filters(access) {
                switch filter {
                case .everyone:
                    buckets.insert(.everyone)
                case .equals(_, let value):
                    if let text = identity.text(of: value), let bucketValue = ScopeBucket.valueText(.text(text)) {
                        buckets.insert(ScopeBucket(kind: ScopeBucket.kind(of: value), value: bucketValue))
                    }
                case .member, .parent:
                    break
                }
            }
        }
        return buckets
    }

    /// The buckets `identity` may `access`: ``fixedBuckets(_:for:)`` and, for each membership,
    /// the buckets of the values `membershipValues` finds in its table's live rows whose where
    /// column holds `member`.
    public func grantedBuckets(
        _ access: ScopeRules.Access, to identity: ScopeIdentity,
        membershipValues: (_ membership: ScopeRules.Membership, _ member: String) -> [WireValue]
    ) -> Set<ScopeBucket> {
        guard identity.subject != nil else { return [] }
        var buckets = fixedBuckets(access, for: identity)
        for membership in memberships(access) {
            guard let member = identity.text(of: membership.equals) else { continue }
            let kind = ScopeBucket.kind(of: membership)
            for value in membershipValues(membership, member) {
                if let text = ScopeBucket.valueText(value) { buckets.insert(ScopeBucket(kind: kind, value: text)) }
            }
        }
        return buckets
    }
}

/// What puts one row in scopes (``ScopeEvaluator/links(_:of:values:)``): its own buckets and its
/// parent rows.
public struct RowLinks: Sendable, Hashable {
    public var buckets: Set<ScopeBucket> = []
    public var parents: Set<Parent> = []

    public init(buckets: Set<ScopeBucket> = [], parents: Set<Parent> = []) {
        self.buckets = buckets
        self.parents = parents
    }

    /// A parent row, by its table and key.
    public struct Parent: Sendable, Hashable {
        public var table: String
        public var key: [String: WireValue]
    }
}

/// A bucket a membership row grants (``ScopeEvaluator/membershipGrants(ofRowIn:values:)``): the
/// bucket of `kind` and `value`, to the identities whose subject (or claim) is `member`.
public struct MembershipGrant: Sendable, Hashable {
    public var kind: String
    public var member: String
    public var value: String

    public init(kind: String, member: String, value: String) {
        self.kind = kind
        self.member = member
        self.value = value
    }

    public var bucket: ScopeBucket { ScopeBucket(kind: kind, value: value) }
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
