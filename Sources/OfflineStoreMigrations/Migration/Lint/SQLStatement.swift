/// One statement of a script, as split by ``SQLStatementSplitter``.
///
/// ```swift
/// let statements = try SQLStatementSplitter.split("CREATE TABLE a (x);\n\nDROP TABLE b;")
/// statements[1].text  // "DROP TABLE b"
/// statements[1].line  // 3
/// ```
public struct SQLStatement: Sendable, Hashable {
    /// The statement's source, from its first token to its last, without the terminating `;`.
    public let text: String
    /// The 1-based line of its first token.
    public let line: Int
    /// The 1-based line of its terminating `;` (or last token when there is none).
    public let endLine: Int
    /// Its tokens, without the terminating `;`.
    public let tokens: [SQLToken]
    /// The comments that belong to it: those after the previous statement (except one on that statement's
    /// last line), those inside it, and one on its own last line after the `;`.
    public let comments: [SQLComment]

    public init(text: String, line: Int, endLine: Int, tokens: [SQLToken], comments: [SQLComment]) {
        self.text = text
        self.line = line
        self.endLine = endLine
        self.tokens = tokens
        self.comments = comments
    }

    /// The source text of some of this statement's tokens, from the first one's start to the last one's end.
    public func text(of tokens: ArraySlice<SQLToken>) -> String {
        guard let first = tokens.first, let last = tokens.last, let base = self.tokens.first?.utf8Range.lowerBound
        else { return "" }
        let utf8 = Array(text.utf8)
        let range = (first.utf8Range.lowerBound - base)..<(last.utf8Range.upperBound - base)
        guard range.lowerBound >= 0, range.upperBound <= utf8.count else { return "" }
        return String(decoding: utf8[range], as: UTF8.self)
    }
}
