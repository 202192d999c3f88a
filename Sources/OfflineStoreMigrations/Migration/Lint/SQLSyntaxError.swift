import OfflineStoreSQLite

/// SQL that cannot be tokenized: a string, quoted name, blob or comment that is never closed.
///
/// ```swift
/// do {
///     _ = try SQLTokenizer.tokenize("SELECT 'oops")
/// } catch {
///     print(error)  // line 1: unterminated string literal (a ' is never closed)
/// }
/// ```
public struct SQLSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was left open.
    public enum Kind: Sendable, Hashable {
        case unterminatedString
        case unterminatedQuotedIdentifier
        case unterminatedBlob
        case unterminatedBlockComment
    }

    public let kind: Kind
    /// The 1-based line where the unterminated construct starts.
    public let line: Int

    public init(kind: Kind, line: Int) {
        self.kind = kind
        self.line = line
    }

    /// What is wrong, without the line: `unterminated string literal (a ' is never closed)`.
    public var message: String {
        switch kind {
        case .unterminatedString: "unterminated string literal (a ' is never closed)"
        case .unterminatedQuotedIdentifier: "unterminated quoted name (a \", ` or [ is never closed)"
        case .unterminatedBlob: "unterminated blob literal (x' is never closed)"
        case .unterminatedBlockComment: "unterminated block comment (/* is never closed with */)"
        }
    }

    public var description: String { "line \(line): \(message)" }
}
