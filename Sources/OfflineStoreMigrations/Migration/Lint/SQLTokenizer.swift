import OfflineStoreSQLite

/// Splits SQLite SQL into tokens, setting comments aside.
///
/// It knows SQLite's lexical rules, not its grammar: bare, `"double"`, `` `back` `` and `[bracket]` quoted
/// names (unquoted, with their quoting remembered), `'string'` literals with `''` escapes, `x'blob'` literals,
/// numbers, parameters and operators. Comments are returned separately so directives in them stay readable.
/// Anything left open (a string, quoted name, blob or block comment) throws ``SQLSyntaxError`` with its line.
///
/// ```swift
/// let tokenized = try SQLTokenizer.tokenize("""
///     -- ostore-lint: allow drop-column
///     ALTER TABLE notes DROP COLUMN 'legacy';
///     """)
/// tokenized.tokens.map(\.text)  // ["ALTER", "TABLE", "notes", "DROP", "COLUMN", "legacy", ";"]
/// tokenized.tokens[0].line      // 2
/// tokenized.comments[0].text    // " ostore-lint: allow drop-column"
/// ```
///
/// See <https://www.sqlite.org/lang_keywords.html> and <https://www.sqlite.org/lang_comment.html>.
public enum SQLTokenizer {
    /// The tokens and comments of `sql`, in source order.
    ///
    /// - Parameter firstLine: the line number of the first line of `sql`, for text cut out of a larger file.
    public static func tokenize(_ sql: String, firstLine: Int = 1) throws(SQLSyntaxError) -> TokenizedSQL {
        var scanner = Scanner(bytes: Array(sql.utf8), line: firstLine)
        return try scanner.run()
    }
}

/// The result of ``SQLTokenizer/tokenize(_:firstLine:)``: tokens without comments, and the comments.
///
/// ```swift
/// let tokenized = try SQLTokenizer.tokenize("SELECT 1 -- one")
/// tokenized.tokens.count         // 2
/// tokenized.comments.map(\.text) // [" one"]
/// ```
public struct TokenizedSQL: Sendable, Hashable {
    public var tokens: [SQLToken]
    public var comments: [SQLComment]

    public init(tokens: [SQLToken], comments: [SQLComment]) {
        self.tokens = tokens
        self.comments = comments
    }
}

/// The scanning state: a byte position and the current line. Works on UTF-8 bytes because every SQL
/// delimiter is ASCII, and bytes of multi-byte characters (all >= 0x80) can only be part of names or literals.
private struct Scanner {
    let bytes: [UInt8]
    var position = 0
    var line: Int
    var tokens: [SQLToken] = []
    var comments: [SQLComment] = []

    init(bytes: [UInt8], line: Int) {
        self.bytes = bytes
        self.line = line
    }

    mutating func run() throws(SQLSyntaxError) -> TokenizedSQL {
        while position < bytes.count {
            let byte = bytes[position]
            let next = position + 1 < bytes.count ? bytes[position + 1] : 0
            switch byte {
            case ASCII.newline:
                line += 1
                position += 1
            case ASCII.space, ASCII.tab, ASCII.carriageReturn, ASCII.formFeed, ASCII.verticalTab:
                position += 1
            case ASCII.minus where next == ASCII.minus:
                scanLineComment()
            case ASCII.slash where next == ASCII.star:
                try scanBlockComment()
            case ASCII.singleQuote:
                try scanString()
            case ASCII.letterX, ASCII.letterXUpper:
                if next == ASCII.singleQuote { try scanBlob() } else { scanWord() }
            case ASCII.doubleQuote, ASCII.backtick:
                try scanQuotedIdentifier(closing: byte, escapable: true)
            case ASCII.openBracket:
                try scanQuotedIdentifier(closing: ASCII.closeBracket, escapable: false)
            case ASCII.digit0...ASCII.digit9:
                scanNumber()
            case ASCII.dot where ASCII.isDigit(next):
                scanNumber()
            case ASCII.question:
                scanParameter(requiresName: false)
            case ASCII.colon, ASCII.at, ASCII.dollar:
                if ASCII.isIdentifierByte(next) { scanParameter(requiresName: true) } else { scanSymbol() }
            default:
                if ASCII.isIdentifierStart(byte) { scanWord() } else { scanSymbol() }
            }
        }
        return TokenizedSQL(tokens: tokens, comments: comments)
    }

    private func string(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    private mutating func append(_ kind: SQLToken.Kind, _ text: String, quoted: Bool = false, from start: Int) {
        tokens.append(SQLToken(kind: kind, text: text, isQuoted: quoted, line: line, utf8Range: start..<position))
    }

    private mutating func scanLineComment() {
        let start = position
        while position < bytes.count, bytes[position] != ASCII.newline { position += 1 }
        comments.append(
            SQLComment(
                text: string(start + 2..<position), line: line, endLine: line, isBlock: false,
                utf8Range: start..<position))
    }

    private mutating func scanBlockComment() throws(SQLSyntaxError) {
        let start = position
        let startLine = line
        position += 2
        while position + 1 < bytes.count, !(bytes[position] == ASCII.star && bytes[position + 1] == ASCII.slash) {
            if bytes[position] == ASCII.newline { line += 1 }
            position += 1
        }
        guard position + 1 < bytes.count else {
            throw SQLSyntaxError(kind: .unterminatedBlockComment, line: startLine)
        }
        position += 2
        comments.append(
            SQLComment(
                text: string(start + 2..<position - 2), line: startLine, endLine: line, isBlock: true,
                utf8Range: start..<position))
    }

    /// Reads up to the closing `quote`, where a doubled quote stands for one (when `escapable`).
    /// Returns the content with escapes removed; the position ends after the closing quote.
    private mutating func scanQuoted(
        closing quote: UInt8, escapable: Bool, unterminated: SQLSyntaxError.Kind
    ) throws(SQLSyntaxError) -> String {
        let startLine = line
        position += 1
        var content: [UInt8] = []
        while true {
            guard position < bytes.count else { throw SQLSyntaxError(kind: unterminated, line: startLine) }
            let byte = bytes[position]
            position += 1
            if byte == quote {
                guard escapable, position < bytes.count, bytes[position] == quote else { break }
                position += 1
            } else if byte == ASCII.newline {
                line += 1
            }
            content.append(byte)
        }
        return String(decoding: content, as: UTF8.self)
    }

    // A literal or quoted name spanning lines reports the line it starts on, like its error would.
    private mutating func scanString() throws(SQLSyntaxError) {
        let start = position
        let startLine = line
        let value = try scanQuoted(closing: ASCII.singleQuote, escapable: true, unterminated: .unterminatedString)
        tokens.append(SQLToken(kind: .string, text: value, line: startLine, utf8Range: start..<position))
    }

    private mutating func scanBlob() throws(SQLSyntaxError) {
        let start = position
        let startLine = line
        position += 1
        let digits = try scanQuoted(closing: ASCII.singleQuote, escapable: false, unterminated: .unterminatedBlob)
        tokens.append(SQLToken(kind: .blob, text: digits, line: startLine, utf8Range: start..<position))
    }

    private mutating func scanQuotedIdentifier(closing: UInt8, escapable: Bool) throws(SQLSyntaxError) {
        let start = position
        let startLine = line
        let name = try scanQuoted(closing: closing, escapable: escapable, unterminated: .unterminatedQuotedIdentifier)
        tokens.append(
            SQLToken(kind: .identifier, text: name, isQuoted: true, line: startLine, utf8Range: start..<position))
    }

    private mutating func scanWord() {
        let start = position
        while position < bytes.count, ASCII.isIdentifierByte(bytes[position]) { position += 1 }
        append(.identifier, string(start..<position), from: start)
    }

    private mutating func scanNumber() {
        let start = position
        if bytes[position] == ASCII.digit0, position + 1 < bytes.count, bytes[position + 1] | 0x20 == ASCII.letterX {
            position += 2
            while position < bytes.count, ASCII.isHexDigit(bytes[position]) { position += 1 }
        } else {
            while position < bytes.count, ASCII.isDigit(bytes[position]) || bytes[position] == ASCII.dot {
                position += 1
            }
            if position < bytes.count, bytes[position] | 0x20 == ASCII.letterE {
                var exponent = position + 1
                if exponent < bytes.count, bytes[exponent] == ASCII.plus || bytes[exponent] == ASCII.minus {
                    exponent += 1
                }
                if exponent < bytes.count, ASCII.isDigit(bytes[exponent]) {
                    position = exponent
                    while position < bytes.count, ASCII.isDigit(bytes[position]) { position += 1 }
                }
            }
        }
        append(.number, string(start..<position), from: start)
    }

    private mutating func scanParameter(requiresName: Bool) {
        let start = position
        position += 1
        if requiresName {
            while position < bytes.count, ASCII.isIdentifierByte(bytes[position]) { position += 1 }
        } else {
            while position < bytes.count, ASCII.isDigit(bytes[position]) { position += 1 }
        }
        append(.parameter, string(start..<position), from: start)
    }

    private static let threeByteSymbols: Set<String> = ["->>"]
    private static let twoByteSymbols: Set<String> = ["||", "<=", ">=", "==", "!=", "<>", "<<", ">>", "->"]

    private mutating func scanSymbol() {
        let start = position
        for (length, symbols) in [(3, Self.threeByteSymbols), (2, Self.twoByteSymbols)]
        where start + length <= bytes.count && symbols.contains(string(start..<start + length)) {
            position = start + length
            append(.symbol, string(start..<position), from: start)
            return
        }
        position += 1
        append(.symbol, string(start..<position), from: start)
    }
}

/// The bytes the tokenizer looks for.
private enum ASCII {
    static let newline = UInt8(ascii: "\n")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")
    static let carriageReturn = UInt8(ascii: "\r")
    static let formFeed: UInt8 = 0x0C
    static let verticalTab: UInt8 = 0x0B
    static let minus = UInt8(ascii: "-")
    static let plus = UInt8(ascii: "+")
    static let slash = UInt8(ascii: "/")
    static let star = UInt8(ascii: "*")
    static let dot = UInt8(ascii: ".")
    static let singleQuote = UInt8(ascii: "'")
    static let doubleQuote = UInt8(ascii: "\"")
    static let backtick = UInt8(ascii: "`")
    static let openBracket = UInt8(ascii: "[")
    static let closeBracket = UInt8(ascii: "]")
    static let question = UInt8(ascii: "?")
    static let colon = UInt8(ascii: ":")
    static let at = UInt8(ascii: "@")
    static let dollar = UInt8(ascii: "$")
    static let underscore = UInt8(ascii: "_")
    static let digit0 = UInt8(ascii: "0")
    static let digit9 = UInt8(ascii: "9")
    static let letterX = UInt8(ascii: "x")
    static let letterXUpper = UInt8(ascii: "X")
    static let letterE = UInt8(ascii: "e")

    static func isDigit(_ byte: UInt8) -> Bool { byte >= digit0 && byte <= digit9 }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "f"))
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z")
    }

    /// Letters, `_` and any byte of a non-ASCII character, which SQLite accepts in bare names.
    static func isIdentifierStart(_ byte: UInt8) -> Bool {
        isLetter(byte) || byte == underscore || byte >= 0x80
    }

    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || isDigit(byte) || byte == dollar
    }
}
