/// A set of rows one filter selects for the same subjects (the buckets of PowerSync, the channels
/// of Couchbase): a row is in the buckets its filters put it in (``ScopeEvaluator/buckets(_:of:values:parentBuckets:)``),
/// a subject is granted buckets (``ScopeEvaluator/grantedBuckets(_:to:membershipValues:)``), and a
/// row is in the subject's scope when the two meet. Filters that select alike share buckets: the
/// lists of a membership and the reminders whose list it is are one bucket per list.
///
/// ```swift
/// let inScope = !evaluator.buckets(.read, of: "lists", values: row, parentBuckets: none)
///     .isDisjoint(with: evaluator.grantedBuckets(.read, to: bob, membershipValues: members))
/// ```
public struct ScopeBucket: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// What selects the bucket's rows: `everyone`, `subject`, `claim NAME`, or a membership
    /// (`in TABLE.SELECT where WHERE = subject`).
    public var kind: String
    /// The value the rows' column holds (``valueText(_:)``); empty for `everyone`.
    public var value: String

    public init(kind: String, value: String) {
        self.kind = kind
        self.value = value
    }

    public static func < (left: ScopeBucket, right: ScopeBucket) -> Bool {
        (left.kind, left.value) < (right.kind, right.value)
    }

    public var description: String { value.isEmpty ? kind : "\(kind): \(value)" }

    static let everyone = ScopeBucket(kind: "everyone", value: "")

    public static func kind(of value: ScopeRules.IdentityValue) -> String {
        switch value {
        case .subject: "subject"
        case .claim(let name): "claim \(name)"
        }
    }

    public static func kind(of membership: ScopeRules.Membership) -> String {
        "in \(membership.table).\(membership.selectColumn) where \(membership.whereColumn) = "
            + kind(of: membership.equals)
    }

    /// A column value as buckets name it: its kind and its value, so that values SQLite finds
    /// equal share a bucket and others do not: the text `"7"` and the integer 7 differ, the integer
    /// 7 and the real 7.0 are one. Nil for NULL, which no filter selects.
    public static func valueText(_ value: WireValue) -> String? {
        switch value {
        case .null: nil
        case .integer(let integer): "integer \(integer)"
        case .real(let real):
            if let integer = Int64(exactly: real) { "integer \(integer)" } else { "real \(real)" }
        case .text(let text): "text \(text)"
        case .blob(let blob): "blob \(blob.base64EncodedString())"
        }
    }
}
