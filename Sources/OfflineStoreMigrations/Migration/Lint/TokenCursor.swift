/// Walks a statement's tokens for the statement parser: keyword matching, names, balanced parentheses.
struct TokenCursor {
    let tokens: ArraySlice<SQLToken>
    private(set) var index: Int

    init(_ tokens: ArraySlice<SQLToken>) {
        self.tokens = tokens
        index = tokens.startIndex
    }

    var isAtEnd: Bool { index >= tokens.endIndex }

    var current: SQLToken? { isAtEnd ? nil : tokens[index] }

    /// The tokens not read yet.
    var rest: ArraySlice<SQLToken> { tokens[min(index, tokens.endIndex)...] }

    mutating func advance() {
        if !isAtEnd { index += 1 }
    }

    /// Whether the current token is `keyword`, without consuming it.
    func at(_ keyword: String) -> Bool { current?.isKeyword(keyword) ?? false }

    /// Consumes `keywords` if the tokens start with all of them in order; otherwise consumes nothing.
    mutating func skip(_ keywords: String...) -> Bool {
        guard index + keywords.count <= tokens.endIndex else { return false }
        for (offset, keyword) in keywords.enumerated() where !tokens[index + offset].isKeyword(keyword) {
            return false
        }
        index += keywords.count
        return true
    }

    /// Consumes one of `keywords` and returns it, or returns nil.
    mutating func skipAny(of keywords: String...) -> String? {
        guard let keyword = current?.keyword, keywords.contains(keyword) else { return nil }
        advance()
        return keyword
    }

    /// A single name: a bare word, a quoted name, or a string (SQLite accepts 'name' where a name is expected).
    mutating func name() -> String? {
        guard let token = current, token.kind == .identifier || token.kind == .string else { return nil }
        advance()
        return token.text
    }

    /// `name` or `schema.name`.
    mutating func qualifiedName() -> QualifiedName? {
        guard let first = name() else { return nil }
        guard current?.isSymbol(".") == true else { return QualifiedName(schema: nil, name: first) }
        advance()
        guard let second = name() else { return QualifiedName(schema: nil, name: first) }
        return QualifiedName(schema: first, name: second)
    }

    /// Skips a parenthesized group if the current token opens one.
    mutating func skipParenthesized() {
        guard current?.isSymbol("(") == true else { return }
        var depth = 0
        while let token = current {
            advance()
            if token.isSymbol("(") {
                depth += 1
            } else if token.isSymbol(")") {
                depth -= 1
                if depth == 0 { return }
            }
        }
    }

    /// Whether `keyword` appears in the unread tokens outside any parentheses.
    func containsAtTopLevel(_ keyword: String) -> Bool {
        topLevelIndex(of: keyword) != nil
    }

    /// The index of the first unread token that is `keyword` outside any parentheses.
    func topLevelIndex(of keyword: String) -> Int? {
        var depth = 0
        for position in rest.indices {
            let token = tokens[position]
            if token.isSymbol("(") {
                depth += 1
            } else if token.isSymbol(")") {
                depth -= 1
            } else if depth == 0 && token.isKeyword(keyword) {
                return position
            }
        }
        return nil
    }
}
