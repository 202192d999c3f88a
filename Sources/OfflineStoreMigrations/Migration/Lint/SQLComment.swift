/// A `-- line` or `/* block */` comment found by ``SQLTokenizer``.
///
/// Comments are not tokens, but they are kept: the linter reads its
/// `-- ostore-lint: allow RULE-ID` directives from them.
///
/// ```swift
/// let comments = try SQLTokenizer.tokenize("-- why\nSELECT 1").comments
/// comments[0].text  // " why"
/// comments[0].line  // 1
/// ```
public struct SQLComment: Sendable, Hashable {
    /// The text between the delimiters (`--` and the end of the line, or `/*` and `*/`).
    public let text: String
    /// The 1-based line the comment starts on.
    public let line: Int
    /// The 1-based line the comment ends on (differs from ``line`` only for block comments).
    public let endLine: Int
    /// Whether it is a `/* ... */` comment.
    public let isBlock: Bool
    /// Where the comment lies in the tokenized text, in UTF-8 bytes.
    public let utf8Range: Range<Int>

    public init(text: String, line: Int, endLine: Int, isBlock: Bool, utf8Range: Range<Int>) {
        self.text = text
        self.line = line
        self.endLine = endLine
        self.isBlock = isBlock
        self.utf8Range = utf8Range
    }
}
