import Foundation
import OfflineStoreSQLite

/// The default value of a column: a literal, or an SQL expression (the escape hatch).
public enum ColumnDefault: Sendable, Hashable {
    case literal(DatabaseValue)
    /// An expression such as `CURRENT_TIMESTAMP` or `strftime('%s','now')`; written in parentheses.
    case expression(String)

    /// The SQL text of the default, as SQLite's `PRAGMA table_info` reports it back.
    var sql: String {
        switch self {
        case .literal(let value): value.sqlLiteral
        case .expression(let expression): "(\(expression))"
        }
    }
}

/// A column of a ``TableDefinition``, declared with a chain of modifiers.
///
/// ```swift
/// Column("id", .text).primaryKey()
/// Column("notes", .text).notNull().defaults("")
/// Column("listID", .text).references("remindersLists", "id", onDelete: .cascade)
/// Column("priority", .integer).check("priority BETWEEN 0 AND 9")
/// ```
///
/// See <https://www.sqlite.org/lang_createtable.html#column_definitions>.
public struct Column: Sendable, Hashable {
    public var name: String
    public var type: ColumnType
    public var isNotNull = false
    public var defaultValue: ColumnDefault?
    /// The collating sequence; nil means SQLite's default, `BINARY`.
    public var collation: String?
    public var isPrimaryKey = false
    public var isAutoincrement = false
    public var isUnique = false
    public var checks: [String] = []
    public var reference: ForeignKeyDefinition?

    public init(_ name: String, _ type: ColumnType) {
        self.name = name
        self.type = type
    }

    /// NOT NULL.
    public func notNull() -> Column { with { $0.isNotNull = true } }

    /// DEFAULT with a literal value, stored as its ``DatabaseValue``.
    public func defaults(_ value: some DatabaseValueConvertible) -> Column {
        with { $0.defaultValue = .literal(value.databaseValue) }
    }

    /// DEFAULT with an SQL expression, e.g. `.defaults(sql: "CURRENT_TIMESTAMP")`.
    public func defaults(sql expression: String) -> Column { with { $0.defaultValue = .expression(expression) } }

    /// PRIMARY KEY on this column alone. `autoincrement` is only valid on an INTEGER key and is
    /// refused on synced tables (their keys must be globally unique).
    public func primaryKey(autoincrement: Bool = false) -> Column {
        with {
            $0.isPrimaryKey = true
            $0.isAutoincrement = autoincrement
        }
    }

    /// UNIQUE.
    public func unique() -> Column { with { $0.isUnique = true } }

    /// CHECK (expression); several checks accumulate.
    public func check(_ expression: String) -> Column { with { $0.checks.append(expression) } }

    /// COLLATE name, e.g. `NOCASE`, `RTRIM` or a collation the app registers.
    public func collate(_ collation: String) -> Column { with { $0.collation = collation.uppercased() } }

    /// REFERENCES parent(column) with the given actions.
    public func references(
        _ parentTable: String, _ parentColumn: String,
        onDelete: ForeignKeyAction = .noAction, onUpdate: ForeignKeyAction = .noAction
    ) -> Column {
        with {
            $0.reference = ForeignKeyDefinition(
                columns: [name], parentTable: parentTable, parentColumns: [parentColumn],
                onDelete: onDelete, onUpdate: onUpdate)
        }
    }

    private func with(_ change: (inout Column) -> Void) -> Column {
        var copy = self
        change(&copy)
        return copy
    }
}

extension DatabaseValue {
    /// The value as an SQL literal, for DEFAULT clauses and canonical text only: user values
    /// are always bound, never written into SQL.
    package var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case .integer(let value): return String(value)
        case .real(let value):
            // A REAL literal must keep a decimal point or exponent, or SQLite reads an INTEGER.
            let text = "\(value)"
            return text.contains(where: { $0 == "." || $0 == "e" || $0 == "n" || $0 == "i" }) ? text : text + ".0"
        case .text(let value): return "'" + value.replacingOccurrences(of: "'", with: "''") + "'"
        case .blob(let data): return "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}
