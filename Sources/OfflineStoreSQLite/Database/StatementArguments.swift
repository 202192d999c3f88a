/// Values to bind to a statement's parameters: positional (`?`) in order,
/// named (`:name`, `@name`, `$name`) by name without the prefix.
///
/// ```swift
/// try db.execute(sql: "UPDATE reminders SET title = ? WHERE id = ?", arguments: ["Call Bob", id])
/// try db.execute(sql: "DELETE FROM reminders WHERE id = :id", arguments: ["id": id])
/// ```
///
/// See <https://www.sqlite.org/lang_expr.html#parameters>.
public struct StatementArguments: Sendable, Hashable, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public var positional: [DatabaseValue]
    public var named: [String: DatabaseValue]

    public init(_ positional: [DatabaseValue] = [], named: [String: DatabaseValue] = [:]) {
        self.positional = positional
        self.named = named
    }

    public init(arrayLiteral elements: (any DatabaseValueConvertible)?...) {
        self.init(elements.map { $0?.databaseValue ?? .null })
    }

    public init(dictionaryLiteral elements: (String, (any DatabaseValueConvertible)?)...) {
        var named: [String: DatabaseValue] = [:]
        for (name, value) in elements {
            named[name] = value?.databaseValue ?? .null
        }
        self.init([], named: named)
    }

    public var isEmpty: Bool { positional.isEmpty && named.isEmpty }

    /// Positional values, then named values ordered by name: the arguments an error reports.
    var allValues: [DatabaseValue] {
        positional + named.sorted { $0.key < $1.key }.map(\.value)
    }
}
