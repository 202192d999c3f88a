/// The `-- ostore-lint: allow RULE-ID[, RULE-ID]` directives in a statement's comments.
///
/// Block comments work too (`/* ostore-lint: allow drop-column */`), and a reason may follow another `--`
/// (`-- ostore-lint: allow drop-column -- unused since 2.0`). A directive that is not `allow`, or names a rule
/// that does not exist, is a problem the linter reports as `unknown-lint-directive`.
struct LintDirectives {
    static let prefix = "ostore-lint:"

    /// The ids of the rules the directives allow.
    private(set) var allowed: Set<String> = []
    /// Directives that suppress nothing, with their line and what is wrong.
    private(set) var problems: [(line: Int, message: String)] = []

    init(_ comments: [SQLComment]) {
        for comment in comments {
            let text = comment.text.trimmingWhitespace
            guard text.hasPrefix(Self.prefix) else { continue }
            // Anything after a further `--` is the author's reason, not rule ids.
            let rest = text.dropFirst(Self.prefix.count)
            let directive = rest.firstRange(of: "--").map { rest[..<$0.lowerBound] } ?? rest
            let words =
                directive
                .split(whereSeparator: { $0 == "," || $0.isWhitespace })
                .map(String.init)
            guard words.first == "allow", words.count > 1 else {
                problems.append(
                    (comment.line, "lint directive \"\(text)\" is not of the form \"ostore-lint: allow RULE-ID\""))
                continue
            }
            for id in words.dropFirst() {
                if LintRule(id: id) != nil {
                    allowed.insert(id)
                } else {
                    problems.append((comment.line, "lint directive allows \"\(id)\", which is not a lint rule"))
                }
            }
        }
    }

    func allows(_ rule: LintRule) -> Bool { allowed.contains(rule.id) }
}

extension String {
    /// The string without leading and trailing spaces, tabs and newlines.
    fileprivate var trimmingWhitespace: String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
