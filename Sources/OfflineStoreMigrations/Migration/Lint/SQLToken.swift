import OfflineStoreSQLite

/// One token of SQLite SQL, as produced by ``SQLTokenizer``.
///
/// ```swift
/// let tokens = try SQLTokenizer.tokenize("DROP TABLE \"Old Notes\"").tokens
/// tokens[0].keyword  // "DROP"
/// tokens[2].text     // "Old Notes" (unquoted)
/// tokens[2].isQuoted // true
/// ```
///
/// See <https://www.sqlite.org/lang_keywords.html> and <https://www.sqlite.org/lang_expr.html#literal_values_constants_>.
public struct SQLToken: Sendable, Hashable, CustomStringConvertible {
    /// What kind of text the token is.
    public enum Kind: Sendable, Hashable {
        /// A keyword or a name: bare (`users`, `CREATE`) or quoted (`"a b"`, `` `a` ``, `[a]`).
        case identifier
        /// A string literal `'...'`; ``SQLToken/text`` is its value with `''` unescaped.
        case string
        /// A blob literal `x'...'`; ``SQLToken/text`` is its hexadecimal digits.
        case blob
        /// An integer or real literal, decimal or hexadecimal.
        case number
        /// A parameter: `?`, `?1`, `:name`, `@name`, `$name`.
        case parameter
        /// An operator or punctuation: `(`, `;`, `||`, `<>`, `->>`, ...
        case symbol
    }

    public let kind: Kind
    /// For identifiers, the name without its quotes; for strings, the value; otherwise the source text.
    public let text: String
    /// Whether an identifier was quoted. A quoted word is always a name, never a keyword.
    public let isQuoted: Bool
    /// The 1-based line the token starts on.
    public let line: Int
    /// Where the token lies in the tokenized text, in UTF-8 bytes.
    public let utf8Range: Range<Int>

    /// The word in upper case when the token is a bare (unquoted) word, which SQLite may read as a keyword;
    /// nil otherwise. SQLite keywords are case-insensitive.
    public var keyword: String? {
        kind == .identifier && !isQuoted ? text.uppercased() : nil
    }

    public init(kind: Kind, text: String, isQuoted: Bool = false, line: Int, utf8Range: Range<Int>) {
        self.kind = kind
        self.text = text
        self.isQuoted = isQuoted
        self.line = line
        self.utf8Range = utf8Range
    }

    /// Whether the token is the bare word `keyword` (compared case-insensitively; pass it in upper case).
    public func isKeyword(_ keyword: String) -> Bool {
        kind == .identifier && !isQuoted && text.utf8.count == keyword.utf8.count && text.uppercased() == keyword
    }

    /// Whether the token is the symbol `symbol`, such as `;` or `(`.
    public func isSymbol(_ symbol: String) -> Bool {
        kind == .symbol && text == symbol
    }

    public var description: String {
        switch kind {
        case .identifier where isQuoted: "\"\(text)\""
        case .string: "'\(text)'"
        case .blob: "x'\(text)'"
        default: text
        }
    }
}
