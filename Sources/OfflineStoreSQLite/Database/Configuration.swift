import Foundation

/// How a connection is opened and prepared. Every setting is applied when the
/// connection opens, before any transaction can start (inside a transaction
/// SQLite silently ignores `PRAGMA foreign_keys`).
///
/// ```swift
/// var configuration = Configuration()
/// configuration.busyTimeout = .seconds(10)
/// configuration.pageCacheKiB = 20_000
/// configuration.prepareDatabase = { db in
///     try db.execute("PRAGMA temp_store = MEMORY")
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

    /// The page cache of the main database, in KiB (`PRAGMA cache_size`): 8 MiB, four times
    /// SQLite's default. Rows keyed by random UUIDs are found through an index whose pages are
    /// spread over the whole file; with 2 MB a sync re-reads most of them from the OS on every
    /// lookup, and an apply spills dirty pages to the WAL in the middle of its transactions and
    /// reads them back. 8 MiB keeps such a table of 100,000 rows in memory. The cache grows as pages
    /// are used, so a small database costs no more. The attached metadatabase gets at least 16 MiB
    /// of its own (``ChangeLog/open(_:migrator:)``). `PRAGMA mmap_size` is not used: it
    /// maps the file, not the WAL, so the apply's re-reads would remain, every mapped page it touches
    /// counts in the process's resident memory, and an I/O error on a mapped page becomes a
    /// signal instead of an error (<https://www.sqlite.org/mmap.html>); set it in
    /// ``prepareDatabase`` if those suit the app. See <https://www.sqlite.org/pragma.html#pragma_cache_size>.
    public var pageCacheKiB = 8_192

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
