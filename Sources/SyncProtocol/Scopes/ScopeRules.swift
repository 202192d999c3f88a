/// A dataset's rules of who sees and writes which rows (Protocol/README.md, section 17;
/// `Protocol/schemas/scope-rules.json`): per synced table, the filters that put a row in a
/// subject's read scope and in its write scope, and the columns a write may set. A row is in a
/// scope when any one of the filters selects it; a table's write scope is empty unless it has
/// write filters.
///
/// Tokens that name no subject (``ScopeIdentity/subject`` nil) are the operator's and the
/// services': they stand outside every scope, and see and write the whole dataset.
///
/// ```swift
/// let rules = try ScopeRules.read(from: Data(rulesFile.utf8))
/// let problems = rules.problems(against: definition)  // [] when every rule fits the schema
/// ```
public struct ScopeRules: Sendable, Hashable {
    /// The rules of each synced table, by the table's name as the file spells it (checked against a
    /// schema, ``problems(against:)``, it must be the declared name).
    public var tables: [String: TableRules]

    public init(tables: [String: TableRules]) {
        self.tables = tables
    }

    /// Who reads and writes one table.
    public struct TableRules: Sendable, Hashable {
        /// A row is readable when one of these selects it; at least one.
        public var read: [RowFilter]
        /// A row is writable when one of these selects it; none makes the table read-only for
        /// every subject.
        public var write: [RowFilter]
        /// The only columns a write may set besides the key; nil for every column.
        public var writableColumns: [String]?

        public init(read: [RowFilter], write: [RowFilter] = [], writableColumns: [String]? = nil) {
            self.read = read
            self.write = write
            self.writableColumns = writableColumns
        }
    }

    /// One way a row can be selected.
    public enum RowFilter: Sendable, Hashable {
        /// Every row, for every subject.
        case everyone
        /// Rows whose `column` holds the subject, or the subject's claim, as text.
        case equals(column: String, to: IdentityValue)
        /// Rows whose `column` holds one of the values `membership` finds for the subject: the
        /// rows of a list the subject is a member of.
        case member(column: String, of: Membership)
        /// Rows whose parent row, referenced by `columns` (a foreign key of the table, to the whole
        /// key of `table`), is in the same scope: a reminder is readable when its list is.
        case parent(table: String, columns: [String])
    }

    /// What a row filter compares a column with: the subject, or one of its claims.
    public enum IdentityValue: Sendable, Hashable {
        case subject
        case claim(String)
    }

    /// The values of `selectColumn` in the live rows of `table` whose `whereColumn` holds the
    /// subject (or claim) `equals` names: with `listMembers(listID, userID)`, the lists of a user.
    public struct Membership: Sendable, Hashable {
        public var table: String
        public var selectColumn: String
        public var whereColumn: String
        public var equals: IdentityValue

        public init(table: String, selectColumn: String, whereColumn: String, equals: IdentityValue = .subject) {
            self.table = table
            self.selectColumn = selectColumn
            self.whereColumn = whereColumn
            self.equals = equals
        }
    }

    /// Read or write.
    public enum Access: String, Sendable, Hashable, CaseIterable {
        case read, write
    }
}

extension ScopeRules.TableRules {
    /// The filters of `access`.
    public func filters(_ access: ScopeRules.Access) -> [ScopeRules.RowFilter] {
        switch access {
        case .read: read
        case .write: write
        }
    }
}

/// Whom a request stands for, as scopes see it: the token's subject and claims
/// (``ScopeRules``).
///
/// ```swift
/// let bob = ScopeIdentity(subject: "bob", claims: ["team": "blue"])
/// ```
public struct ScopeIdentity: Sendable, Hashable {
    /// Nil for a token that stands for whoever holds it: outside every scope.
    public var subject: String?
    public var claims: [String: String]

    public init(subject: String?, claims: [String: String] = [:]) {
        self.subject = subject
        self.claims = claims
    }

    /// The subject or claim `value` names, nil when the identity has none.
    public func text(of value: ScopeRules.IdentityValue) -> String? {
        switch value {
        case .subject: subject
        case .claim(let name): claims[name]
        }
    }
}
