import Foundation

/// SQL text whose interpolated values become bound parameters.
///
/// `"SELECT * FROM reminders WHERE id = \(id)"` produces the text
/// `SELECT * FROM reminders WHERE id = ?` and binds `id`. There is no way to
/// put a value into the text: identifiers go through `\(identifier:)`, which
/// quotes them, and other `SQL` values compose with `\(fragment)`.
///
/// ```swift
/// let table = "reminders"
/// let done = true
/// let query: SQL = "SELECT count(*) FROM \(identifier: table) WHERE done = \(done) AND id IN (\(list: ids))"
/// let count = try db.fetchValue(Int.self, query)
/// ```
///
/// See <https://www.sqlite.org/lang_expr.html#parameters> and
/// <https://www.sqlite.org/lang_keywords.html> for identifier quoting.
public struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The SQL text, with a `?` for every value.
    public private(set) var text: String
    /// The values bound to the `?`s, in order.
    public private(set) var arguments: [DatabaseValue]

    /// SQL text written by the programmer, with values bound separately.
    public init(sql: String, arguments: [DatabaseValue] = []) {
        text = sql
        self.arguments = arguments
    }

    public init(stringLiteral value: String) {
        self.init(sql: value)
    }

    public init(stringInterpolation: StringInterpolation) {
        text = stringInterpolation.text
        arguments = stringInterpolation.arguments
    }

    public var description: String { text }

    /// Appends another fragment, keeping its arguments.
    public mutating func append(_ other: SQL) {
        text += other.text
        arguments += other.arguments
    }

    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        var result = lhs
        result.append(rhs)
        return result
    }

    public struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        var arguments: [DatabaseValue] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount)
            arguments.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            text += literal
        }

        /// A value: becomes `?` and a bound argument.
        public mutating func appendInterpolation(_ value: some DatabaseValueConvertible) {
            text += "?"
            arguments.append(value.databaseValue)
        }

        /// An optional value: `nil` binds NULL.
        public mutating func appendInterpolation(_ value: (some DatabaseValueConvertible)?) {
            text += "?"
            arguments.append(value?.databaseValue ?? .null)
        }

        /// A table, column or schema name, quoted: `"my ""odd"" name"`.
        public mutating func appendInterpolation(identifier: String) {
            text += quoteIdentifier(identifier)
        }

        /// Several values as a comma-separated list of parameters, for `IN (...)`. An empty
        /// sequence writes nothing: SQLite reads `x IN ()` as false and `x NOT IN ()` as true.
        public mutating func appendInterpolation<Values: Sequence>(list values: Values)
        where Values.Element: DatabaseValueConvertible {
            var first = true
            for value in values {
                text += first ? "?" : ", ?"
                arguments.append(value.databaseValue)
                first = false
            }
        }

        /// Another SQL fragment with its arguments.
        public mutating func appendInterpolation(_ fragment: SQL) {
            text += fragment.text
            arguments += fragment.arguments
        }
    }
}

/// Quotes an SQL identifier: wraps it in double quotes and doubles the ones inside.
public func quoteIdentifier(_ identifier: String) -> String {
    // Most identifiers hold no quote; skipping Foundation's search-and-replace for them matters
    // when a schema of many tables is rendered and hashed at every launch.
    guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
    return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
}
