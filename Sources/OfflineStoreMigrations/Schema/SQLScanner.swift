import OfflineStoreSQLite

/// A small scanner for the SQL that SQLite stores in `sqlite_schema`, enough to read back what
/// the pragmas do not report: CHECK constraints, column collations, AUTOINCREMENT, partial
/// index conditions and FTS5 arguments. It tracks quotes and parentheses; it is not a parser.
package struct SQLScanner {
    package enum TokenKind: Equatable {
        case word
        case quotedIdentifier
        case string
        case number
        case punctuation
    }

    package struct Token: Equatable {
        package var kind: TokenKind
        /// The source text of the token (quotes included).
        package var text: String
        /// For words and quoted identifiers: the identifier, unquoted.
        var identifier: String {
            switch kind {
            case .quotedIdentifier:
                let inner = text.dropFirst().dropLast()
                let quote = text.first.map(String.init) ?? "\""
                return quote == "[" ? String(inner) : inner.replacingOccurrences(of: quote + quote, with: quote)
            default: return text
            }
        }
        package var upper: String { text.uppercased() }
        func isKeyword(_ keyword: String) -> Bool { kind == .word && upper == keyword }
    }

    package static func tokens(_ sql: String) -> [Token] {
        var tokens: [Token] = []
        let characters = Array(sql)
        var index = 0
        func scanQuoted(_ close: Character, doubling: Bool) -> String {
            var text = String(characters[index])
            index += 1
            while index < characters.count {
                let character = characters[index]
                text.append(character)
                index += 1
                if character == close {
                    if doubling, index < characters.count, characters[index] == close {
                        text.append(close)
                        index += 1
                    } else {
                        break
                    }
                }
            }
            return text
        }
        while index < characters.count {
            let character = characters[index]
            if character.isWhitespace {
                index += 1
            } else if character == "-", index + 1 < characters.count, characters[index + 1] == "-" {
                while index < characters.count, characters[index] != "\n" { index += 1 }
            } else if character == "/", index + 1 < characters.count, characters[index + 1] == "*" {
                index += 2
                while index + 1 < characters.count, !(characters[index] == "*" && characters[index + 1] == "/") {
                    index += 1
                }
                index += 2
            } else if character == "'" {
                tokens.append(Token(kind: .string, text: scanQuoted("'", doubling: true)))
            } else if character == "\"" || character == "`" {
                tokens.append(Token(kind: .quotedIdentifier, text: scanQuoted(character, doubling: true)))
            } else if character == "[" {
                tokens.append(Token(kind: .quotedIdentifier, text: scanQuoted("]", doubling: false)))
            } else if character.isLetter || character == "_" {
                let start = index
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || characters[index] == "_"
                        || characters[index] == "$"
                {
                    index += 1
                }
                let word = String(characters[start..<index])
                // x'ABCD' is a blob literal, not a word followed by a string.
                if word.uppercased() == "X", index < characters.count, characters[index] == "'" {
                    tokens.append(Token(kind: .string, text: word + scanQuoted("'", doubling: true)))
                } else {
                    tokens.append(Token(kind: .word, text: word))
                }
            } else if character.isNumber
                || (character == "." && index + 1 < characters.count && characters[index + 1].isNumber)
            {
                let start = index
                while index < characters.count,
                    characters[index].isNumber || characters[index].isLetter || characters[index] == "."
                        || ((characters[index] == "+" || characters[index] == "-")
                            && (characters[index - 1] == "e" || characters[index - 1] == "E"))
                {
                    index += 1
                }
                tokens.append(Token(kind: .number, text: String(characters[start..<index])))
            } else {
                let twoCharacter = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["<=", ">=", "<>", "!=", "==", "||", "<<", ">>", "->"].contains(twoCharacter) {
                    tokens.append(Token(kind: .punctuation, text: twoCharacter))
                    index += 2
                } else {
                    tokens.append(Token(kind: .punctuation, text: String(character)))
                    index += 1
                }
            }
        }
        return tokens
    }

    /// Expression text in a normal form for comparison: comments and layout dropped, bare words
    /// and quoted identifiers in upper case, one space only between adjacent words.
    static func normalizedExpression(_ sql: String) -> String {
        normalized(tokens(sql)[...])
    }

    static func normalized(_ tokens: ArraySlice<Token>) -> String {
        var output = ""
        var previousIsWordLike = false
        for token in tokens {
            let isWordLike = token.kind != .punctuation
            if isWordLike && previousIsWordLike { output += " " }
            switch token.kind {
            case .word, .number: output += token.upper
            case .quotedIdentifier: output += token.identifier.uppercased()
            case .string: output += token.text
            case .punctuation: output += token.text
            }
            previousIsWordLike = isWordLike
        }
        return output
    }

    /// The index of the parenthesis closing the one at `open`, or the end.
    static func closingParenthesis(in tokens: [Token], from open: Int) -> Int {
        var depth = 0
        for index in open..<tokens.count {
            if tokens[index].text == "(" { depth += 1 }
            if tokens[index].text == ")" {
                depth -= 1
                if depth == 0 { return index }
            }
        }
        return tokens.count
    }

    /// The top-level comma-separated items inside the first parenthesised list.
    static func parenthesisedItems(_ tokens: [Token]) -> [ArraySlice<Token>] {
        guard let open = tokens.firstIndex(where: { $0.text == "(" }) else { return [] }
        let close = closingParenthesis(in: tokens, from: open)
        var items: [ArraySlice<Token>] = []
        var depth = 0
        var start = open + 1
        for index in (open + 1)..<close {
            let text = tokens[index].text
            if text == "(" { depth += 1 }
            if text == ")" { depth -= 1 }
            if text == "," && depth == 0 {
                items.append(tokens[start..<index])
                start = index + 1
            }
        }
        if start < close { items.append(tokens[start..<close]) }
        return items
    }

    /// The normalised expressions of every `CHECK (…)` in a slice of tokens.
    static func checkExpressions(in tokens: ArraySlice<Token>) -> [String] {
        let array = Array(tokens)
        var checks: [String] = []
        var index = 0
        while index < array.count {
            if array[index].isKeyword("CHECK"), index + 1 < array.count, array[index + 1].text == "(" {
                let close = closingParenthesis(in: array, from: index + 1)
                checks.append(normalized(array[(index + 2)..<min(close, array.count)]))
                index = close
            }
            index += 1
        }
        return checks
    }
}
