/// An error from PostgreSQL or libpq: what failed, the server's SQLSTATE when there is one, and
/// whether the connection itself is gone. The statement's SQL is kept for debugging but left out
/// of ``description`` (it goes to logs and 5xx bodies); only the statement's name is shown.
///
/// ```swift
/// do { try connection.execute(.health) } catch { if error.isRetryable { … answer 503 … } }
/// ```
///
/// See <https://www.postgresql.org/docs/15/errcodes-appendix.html>.
public struct PostgresError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The connection could not be opened, or broke while in use.
        case connection
        /// The server refused or failed a statement (see ``sqlState``).
        case statement
        /// A result did not have the shape the caller expected (type, column count).
        case result
    }

    public var kind: Kind
    public var message: String
    /// The five-character SQLSTATE, e.g. `23505` for a unique violation.
    public var sqlState: String?
    /// The name of the prepared statement (or `script`) that failed.
    public var statementName: String?
    /// The SQL that failed; not part of ``description``.
    public var sql: String?

    public init(
        _ kind: Kind, _ message: String, sqlState: String? = nil, statementName: String? = nil, sql: String? = nil
    ) {
        self.kind = kind
        self.message = message
        self.sqlState = sqlState
        self.statementName = statementName
        self.sql = sql
    }

    /// Whether trying again later may succeed: the connection is gone, the server is shutting
    /// down or starting, or it refused more connections (SQLSTATE classes 08, 57P, 53300), or the
    /// transaction lost a serialization race or deadlock (40001, 40P01).
    public var isRetryable: Bool {
        if kind == .connection { return true }
        guard let sqlState else { return false }
        return sqlState.hasPrefix("08") || sqlState.hasPrefix("57P") || sqlState == "53300" || sqlState == "40001"
            || sqlState == "40P01"
    }

    public var description: String {
        var text = "PostgreSQL: \(message)"
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if let statementName { text += " in statement \(statementName)" }
        return text
    }
}
