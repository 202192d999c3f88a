import Foundation

/// How a connection is opened and prepared. Every setting is applied when the
/// connection opens, before any transaction can start (inside a transaction
/// SQLite silently ignores `PRAGMA foreign_keys`).
///
/// ```swift
/// var configuration = Configuration()
/// configuration.busyTimeout = .seconds(10)
/// configuration.prepareDatabase = { db in
///     try db.execute("PRAGMA cache_size = -20000")
/// }
/// let db = try Database(path: "/tmp/app.sqlite", configuration: configuration)
/// ```
///
/// See <https://www.sqlite.org/pragma.html>.
public struct Configuration: Sendable {
    /// `PRAGMA foreign_keys`: on by default.
    public var foreignKeysEnabled = true

    /// `PRAGMA journal_mode` for file databases (in-memory databases keep `memory`).
    public var journalMode: JournalMode = .wal

    /// `PRAGMA synchronous`: `normal` is durable against application crashes in WAL mode.
    public var synchronous: SynchronousMode = .normal

    /// How long a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    public var busyTimeout: Duration = .seconds(5)

    /// Open the file read-only.
    public var readonly = false

    /// Show bound argument values in ``DatabaseError/description`` (off: they are user data).
    public var publicStatementArguments = false

    /// Where the library logs; `nil` (the default) is silent.
    public var logHandler: (any LogHandler)?

    /// Runs on every new connection after the settings above: register
    /// functions, set more pragmas, `ATTACH` databases.
    public var prepareDatabase: (@Sendable (Database) throws -> Void)?

    public init() {}
}

/// See <https://www.sqlite.org/pragma.html#pragma_journal_mode>.
public enum JournalMode: String, Sendable {
    case delete = "DELETE"
    case truncate = "TRUNCATE"
    case persist = "PERSIST"
    case wal = "WAL"
}

/// See <https://www.sqlite.org/pragma.html#pragma_synchronous>.
public enum SynchronousMode: String, Sendable {
    case off = "OFF"
    case normal = "NORMAL"
    case full = "FULL"
    case extra = "EXTRA"
}
