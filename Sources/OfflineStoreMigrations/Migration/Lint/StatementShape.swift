/// What a statement does, as far as the lint rules care: just enough of SQLite's grammar to name the tables
/// and columns a statement touches. Everything else is `.other`.
///
/// See <https://www.sqlite.org/lang.html>.
enum StatementShape {
    case begin
    case commit
    case rollback
    case savepoint(String)
    case release(String)
    case createTable(QualifiedName, ifNotExists: Bool, isTemporary: Bool, fromSelect: Bool)
    /// `kind` is how the statement names it: `INDEX`, `UNIQUE INDEX`, `VIEW`, `VIRTUAL TABLE`, ...
    case createObject(kind: String, name: QualifiedName, ifNotExists: Bool)
    /// A trigger, with the statements of its body.
    case createTrigger(QualifiedName, ifNotExists: Bool, body: [ArraySlice<SQLToken>])
    case dropTable(QualifiedName)
    case renameTable(QualifiedName, to: String)
    case addColumn(table: QualifiedName, column: String, definition: ColumnDefinition)
    case dropColumn(table: QualifiedName, column: String)
    /// `ALTER TABLE t ALTER|MODIFY|CHANGE [COLUMN] c ...`, which SQLite does not have.
    case changeColumnInPlace(table: QualifiedName, column: String, verb: String)
    /// `PRAGMA name` (value nil) or `PRAGMA name = value` / `PRAGMA name(value)`; the value upper-cased.
    case pragma(QualifiedName, value: String?)
    /// A DELETE or UPDATE of a table, and whether it has a top-level WHERE.
    case write(WriteVerb, QualifiedName, hasWhere: Bool)
    /// An INSERT or REPLACE; `copiesFrom` is the first table of an `INSERT ... SELECT ... FROM table`.
    case insert(into: QualifiedName, copiesFrom: QualifiedName?)
    case other

    enum WriteVerb: String {
        case delete = "DELETE"
        case update = "UPDATE"
    }

    /// What the linter needs to know about a column added by `ALTER TABLE ... ADD COLUMN`.
    struct ColumnDefinition {
        var isNotNull = false
        /// Has a DEFAULT whose value is not NULL.
        var hasNonNullDefault = false
        /// `GENERATED ALWAYS AS (...)` or `AS (...)`: computed, so it needs no default.
        var isGenerated = false
    }

    init(_ tokens: ArraySlice<SQLToken>) {
        var cursor = TokenCursor(tokens)
        if cursor.skip("EXPLAIN") {
            self = .other  // EXPLAIN describes a statement without running it
            return
        }
        if cursor.skip("WITH") {
            Self.skipCommonTableExpressions(&cursor)
        }
        guard let keyword = cursor.current?.keyword else {
            self = .other
            return
        }
        cursor.advance()
        switch keyword {
        case "BEGIN": self = .begin
        case "COMMIT", "END": self = .commit
        case "ROLLBACK": self = Self.rollback(&cursor)
        case "SAVEPOINT": self = cursor.name().map(StatementShape.savepoint) ?? .other
        case "RELEASE":
            _ = cursor.skip("SAVEPOINT")
            self = cursor.name().map(StatementShape.release) ?? .other
        case "CREATE": self = Self.create(&cursor)
        case "DROP":
            guard cursor.skip("TABLE") else {
                self = .other
                return
            }
            _ = cursor.skip("IF", "EXISTS")
            self = cursor.qualifiedName().map(StatementShape.dropTable) ?? .other
        case "ALTER": self = Self.alterTable(&cursor)
        case "PRAGMA": self = Self.pragma(&cursor)
        case "DELETE":
            guard cursor.skip("FROM"), let table = cursor.qualifiedName() else {
                self = .other
                return
            }
            self = .write(.delete, table, hasWhere: cursor.containsAtTopLevel("WHERE"))
        case "UPDATE":
            if cursor.skip("OR") { cursor.advance() }  // OR REPLACE | ROLLBACK | ABORT | FAIL | IGNORE
            guard let table = cursor.qualifiedName() else {
                self = .other
                return
            }
            self = .write(.update, table, hasWhere: cursor.containsAtTopLevel("WHERE"))
        case "INSERT", "REPLACE":
            if cursor.skip("OR") { cursor.advance() }
            self = Self.insert(&cursor)
        default: self = .other
        }
    }

    /// `WITH [RECURSIVE] name [(columns)] AS [NOT] [MATERIALIZED] (select) [, ...]`, up to the statement it prefixes.
    private static func skipCommonTableExpressions(_ cursor: inout TokenCursor) {
        _ = cursor.skip("RECURSIVE")
        repeat {
            _ = cursor.name()
            cursor.skipParenthesized()
            _ = cursor.skip("AS")
            _ = cursor.skip("NOT")
            _ = cursor.skip("MATERIALIZED")
            cursor.skipParenthesized()
            guard cursor.current?.isSymbol(",") == true else { return }
            cursor.advance()
        } while !cursor.isAtEnd
    }

    /// `ROLLBACK [TRANSACTION [name]] [TO [SAVEPOINT] name]`: only the form without TO ends the transaction.
    private static func rollback(_ cursor: inout TokenCursor) -> StatementShape {
        cursor.containsAtTopLevel("TO") ? .other : .rollback
    }

    private static func create(_ cursor: inout TokenCursor) -> StatementShape {
        let isTemporary = cursor.skipAny(of: "TEMP", "TEMPORARY") != nil
        var kind: String
        if cursor.skip("TABLE") {
            kind = "TABLE"
        } else if cursor.skip("VIRTUAL", "TABLE") {
            kind = "VIRTUAL TABLE"
        } else if cursor.skip("INDEX") {
            kind = "INDEX"
        } else if cursor.skip("UNIQUE", "INDEX") {
            kind = "UNIQUE INDEX"
        } else if let other = cursor.skipAny(of: "VIEW", "TRIGGER") {
            kind = other
        } else {
            return .other
        }
        if isTemporary { kind = "TEMP " + kind }
        let ifNotExists = cursor.skip("IF", "NOT", "EXISTS")
        guard let name = cursor.qualifiedName() else { return .other }
        switch kind {
        case "TABLE", "TEMP TABLE":
            return .createTable(name, ifNotExists: ifNotExists, isTemporary: isTemporary, fromSelect: cursor.at("AS"))
        case "TRIGGER", "TEMP TRIGGER":
            return .createTrigger(name, ifNotExists: ifNotExists, body: triggerBody(cursor.rest))
        default:
            return .createObject(kind: kind, name: name, ifNotExists: ifNotExists)
        }
    }

    /// The statements between a trigger's `BEGIN` and its final `END`, split on `;` outside `CASE ... END`.
    private static func triggerBody(_ tokens: ArraySlice<SQLToken>) -> [ArraySlice<SQLToken>] {
        var openCases = 0
        var bodyStart: Int?
        for index in tokens.indices {
            if tokens[index].isKeyword("CASE") {
                openCases += 1
            } else if tokens[index].isKeyword("END") && openCases > 0 {
                openCases -= 1
            } else if tokens[index].isKeyword("BEGIN") && openCases == 0 {
                bodyStart = index + 1
                break
            }
        }
        guard let bodyStart else { return [] }
        var bodyEnd = tokens.endIndex
        if let last = tokens.last, last.isKeyword("END") { bodyEnd -= 1 }
        guard bodyStart < bodyEnd else { return [] }
        var statements: [ArraySlice<SQLToken>] = []
        var statementStart = bodyStart
        openCases = 0
        for index in bodyStart..<bodyEnd {
            if tokens[index].isKeyword("CASE") {
                openCases += 1
            } else if tokens[index].isKeyword("END") && openCases > 0 {
                openCases -= 1
            } else if tokens[index].isSymbol(";") && openCases == 0 {
                if statementStart < index { statements.append(tokens[statementStart..<index]) }
                statementStart = index + 1
            }
        }
        if statementStart < bodyEnd { statements.append(tokens[statementStart..<bodyEnd]) }
        return statements
    }

    private static func alterTable(_ cursor: inout TokenCursor) -> StatementShape {
        guard cursor.skip("TABLE"), let table = cursor.qualifiedName() else { return .other }
        if cursor.skip("RENAME", "TO") {
            return cursor.name().map { .renameTable(table, to: $0) } ?? .other
        }
        if cursor.skip("ADD") {
            _ = cursor.skip("COLUMN")
            guard let column = cursor.name() else { return .other }
            return .addColumn(table: table, column: column, definition: columnDefinition(cursor))
        }
        if cursor.skip("DROP") {
            _ = cursor.skip("COLUMN")
            return cursor.name().map { .dropColumn(table: table, column: $0) } ?? .other
        }
        if let verb = cursor.skipAny(of: "ALTER", "MODIFY", "CHANGE") {
            _ = cursor.skip("COLUMN")
            return .changeColumnInPlace(table: table, column: cursor.name() ?? "?", verb: verb)
        }
        return .other  // RENAME [COLUMN] a TO b
    }

    /// Reads the constraints of an added column, outside parentheses (so `CHECK (x IS NOT NULL)` is not NOT NULL).
    private static func columnDefinition(_ cursor: TokenCursor) -> ColumnDefinition {
        var definition = ColumnDefinition()
        var depth = 0
        let tokens = cursor.rest
        for index in tokens.indices {
            let token = tokens[index]
            if token.isSymbol("(") {
                depth += 1
            } else if token.isSymbol(")") {
                depth -= 1
            }
            guard depth == 0, let keyword = token.keyword else { continue }
            let next = index + 1 < tokens.endIndex ? tokens[index + 1] : nil
            switch keyword {
            case "NOT" where next?.isKeyword("NULL") == true:
                definition.isNotNull = true
            case "DEFAULT":
                definition.hasNonNullDefault = !isNullDefault(tokens[(index + 1)...])
            case "AS", "GENERATED":
                definition.isGenerated = true
            default:
                break
            }
        }
        return definition
    }

    /// Whether a DEFAULT's value is NULL: `NULL` or `(NULL)`, any number of parentheses.
    private static func isNullDefault(_ tokens: ArraySlice<SQLToken>) -> Bool {
        let value = tokens.drop(while: { $0.isSymbol("(") })
        return value.first?.isKeyword("NULL") ?? true
    }

    private static func pragma(_ cursor: inout TokenCursor) -> StatementShape {
        guard let name = cursor.qualifiedName() else { return .other }
        let value = cursor.rest.filter { !($0.isSymbol("=") || $0.isSymbol("(") || $0.isSymbol(")")) }
        guard !value.isEmpty else { return .pragma(name, value: nil) }
        return .pragma(name, value: value.map(\.text).joined().uppercased())
    }

    private static func insert(_ cursor: inout TokenCursor) -> StatementShape {
        guard cursor.skip("INTO"), let table = cursor.qualifiedName() else { return .other }
        guard let select = cursor.topLevelIndex(of: "SELECT") else { return .insert(into: table, copiesFrom: nil) }
        let fromSelect = TokenCursor(cursor.tokens[select...])
        guard let from = fromSelect.topLevelIndex(of: "FROM") else { return .insert(into: table, copiesFrom: nil) }
        var source = TokenCursor(cursor.tokens[(from + 1)...])
        return .insert(into: table, copiesFrom: source.qualifiedName())
    }
}
