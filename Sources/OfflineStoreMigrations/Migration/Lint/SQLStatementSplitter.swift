/// Splits a script into statements on top-level `;`.
///
/// A `CREATE [TEMP] TRIGGER ... BEGIN ...; ...; END` stays one statement: `;` inside its body does not split,
/// and neither does the `END` of a `CASE ... END` inside it. Semicolons in strings, quoted names and comments
/// are never seen, because splitting works on tokens. Empty statements (`;;`) are dropped.
///
/// ```swift
/// let statements = try SQLStatementSplitter.split("""
///     CREATE TRIGGER IF NOT EXISTS touch AFTER UPDATE ON notes BEGIN
///         UPDATE notes SET updatedAt = 1 WHERE id = new.id;
///     END;
///     SELECT ';';
///     """)
/// statements.count    // 2
/// statements[1].line  // 4
/// ```
public enum SQLStatementSplitter {
    /// The statements of `script`, in order. Throws when a string, quoted name or comment is never closed.
    ///
    /// - Parameter firstLine: the line number of the first line of `script`.
    public static func split(_ script: String, firstLine: Int = 1) throws(SQLSyntaxError) -> [SQLStatement] {
        try splitKeepingStrayComments(script, firstLine: firstLine).statements
    }

    /// The statements, and the comments that belong to none (after the last statement, or in an empty script).
    static func splitKeepingStrayComments(
        _ script: String, firstLine: Int = 1
    ) throws(SQLSyntaxError) -> (statements: [SQLStatement], strayComments: [SQLComment]) {
        let tokenized = try SQLTokenizer.tokenize(script, firstLine: firstLine)
        let pieces = statementPieces(tokenized.tokens)
        let utf8 = Array(script.utf8)
        var comments = tokenized.comments[...]
        var statements: [SQLStatement] = []
        for (index, piece) in pieces.enumerated() {
            let nextLine = index + 1 < pieces.count ? pieces[index + 1].tokens[0].line : Int.max
            var own: [SQLComment] = []
            // Comments before the statement or inside it are its own; so is one after its `;` on its last
            // line (a trailing remark), unless the next statement starts on that same line.
            while let comment = comments.first,
                comment.utf8Range.lowerBound < piece.end || (comment.line == piece.endLine && nextLine != piece.endLine)
            {
                own.append(comment)
                comments.removeFirst()
            }
            let first = piece.tokens[0]
            let last = piece.tokens[piece.tokens.count - 1]
            statements.append(
                SQLStatement(
                    text: String(decoding: utf8[first.utf8Range.lowerBound..<last.utf8Range.upperBound], as: UTF8.self),
                    line: first.line, endLine: piece.endLine, tokens: piece.tokens, comments: own))
        }
        return (statements, Array(comments))
    }

    /// A statement's tokens, where it ends (after its `;`, in UTF-8 bytes) and the line it ends on.
    private struct Piece {
        var tokens: [SQLToken]
        var end: Int
        var endLine: Int
    }

    private static func statementPieces(_ tokens: [SQLToken]) -> [Piece] {
        var pieces: [Piece] = []
        var current: [SQLToken] = []
        // Open BEGIN (of a trigger body) and CASE blocks; a `;` splits only when none is open.
        var openBlocks = 0
        var isTrigger = false
        for token in tokens {
            if token.isSymbol(";") && openBlocks == 0 {
                if !current.isEmpty {
                    pieces.append(Piece(tokens: current, end: token.utf8Range.upperBound, endLine: token.line))
                }
                current = []
                isTrigger = false
                continue
            }
            current.append(token)
            if current.count <= 3 && !isTrigger {
                isTrigger = startsTrigger(current)
            }
            if token.isKeyword("CASE") {
                openBlocks += 1
            } else if token.isKeyword("BEGIN") && isTrigger && openBlocks == 0 {
                openBlocks = 1
            } else if token.isKeyword("END") && openBlocks > 0 {
                openBlocks -= 1
            }
        }
        if let last = current.last {
            pieces.append(Piece(tokens: current, end: last.utf8Range.upperBound, endLine: last.line))
        }
        return pieces
    }

    /// `CREATE TRIGGER` or `CREATE TEMP|TEMPORARY TRIGGER`.
    private static func startsTrigger(_ tokens: [SQLToken]) -> Bool {
        guard tokens.count >= 2, tokens[0].isKeyword("CREATE") else { return false }
        if tokens[1].isKeyword("TRIGGER") { return true }
        return tokens.count >= 3 && (tokens[1].isKeyword("TEMP") || tokens[1].isKeyword("TEMPORARY"))
            && tokens[2].isKeyword("TRIGGER")
    }
}
