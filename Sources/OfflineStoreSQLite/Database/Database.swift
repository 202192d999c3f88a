import CSQLite
import Foundation

/// One SQLite connection.
///
/// A `Database` is not `Sendable`: use it from one thread at a time, or let a
/// ``DatabasePool`` hand it out. Opening applies the ``Configuration``
/// (foreign keys, WAL, synchronous, busy timeout, then the app's
/// ``Configuration/prepareDatabase`` hook) before any transaction can start.
///
/// ```swift
/// let db = try Database(path: "/tmp/reminders.sqlite")
/// try db.execute("CREATE TABLE IF NOT EXISTS reminders (id TEXT PRIMARY KEY, title TEXT NOT NULL)")
/// try db.execute("INSERT INTO reminders VALUES (\(UUID().uuidString), \("Buy milk"))")
/// let titles = try db.fetchAll(String.self, "SELECT title FROM reminders")
/// ```
///
/// See <https://www.sqlite.org/c3ref/open.html>.
public final class Database {
    /// The file path, or `:memory:`.
    public let path: String
    public let configuration: Configuration

    let connection: ConnectionHandle
    // Per-statement and per-record state, touched on every execution. A Database is
    // not Sendable, so accesses never overlap and need no dynamic exclusivity checks.
    @exclusivity(unchecked) var statementCache: [String: Statement] = [:]
    @exclusivity(unchecked) var recordInsertStatements: [RecordInsertKey: Statement] = [:]
    @exclusivity(unchecked) var recentRecordInserts: [ObjectIdentifier: RecentRecordInsert] = [:]
    @exclusivity(unchecked) var recordScratch = PersistenceContainer()
    /// The tables records are read and written by key in, by name (``RecordTable``).
    @exclusivity(unchecked) var recordTables: [String: RecordTable] = [:]
    @exclusivity(unchecked) var recordWritePlans: [ObjectIdentifier: RecordWritePlan] = [:]
    var savepointDepth = 0
    var hooks = HookBoxes()
    /// Read by the change log's triggers through an SQL function; see ``withoutRecordingChanges(_:)``.
    package let changeRecording = ChangeRecordingSwitch()

    /// Opens (creating if needed) the database file at `path`; pass `":memory:"` for a private in-memory database.
    public init(path: String, configuration: Configuration = Configuration()) throws(DatabaseError) {
        self.path = path
        self.configuration = configuration
        // SQLITE_OPEN_URI: `file:` names, in the open and in ATTACH, take URI parameters whatever the
        // SQLite build's default (Debian's is on), so the change-log reader can ATTACH `?mode=ro`.
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE | SQLITE_OPEN_URI
        flags |= configuration.readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        connection = try ConnectionHandle(
            path: path, flags: flags, showsArguments: configuration.publicStatementArguments)
        do {
            try applyConfiguration()
        } catch {
            try? connection.close()
            throw error as? DatabaseError
                ?? DatabaseError(resultCode: .error, message: "cannot configure \(path): \(error)")
        }
        configuration.logHandler.log(.debug, "opened database", metadata: ["path": path])
    }

    deinit {
        // Statements a caller still holds keep the connection alive: no hook may outlive its box.
        removeHooks()
        // Finalize our statements first so sqlite3_close_v2 can release the connection now.
        changeRecording.finalizeStatements()
        statementCache.removeAll()
        recordInsertStatements.removeAll()
        recentRecordInserts.removeAll()
        recordTables.removeAll()
        recordWritePlans.removeAll()
    }

    /// Opens a private in-memory database (WAL does not apply).
    public static func inMemory(configuration: Configuration = Configuration()) throws(DatabaseError) -> Database {
        try Database(path: ":memory:", configuration: configuration)
    }

    var isInMemory: Bool { path == ":memory:" || path.isEmpty || path.hasPrefix("file::memory:") }

    private func applyConfiguration() throws {
        let handle = try connection.handle(for: "configure")
        // No double-quoted string literals: "name" is always an identifier, a typo is an error.
        try setFlag(SQLITE_DBCONFIG_DQS_DML, false, handle)
        try setFlag(SQLITE_DBCONFIG_DQS_DDL, false, handle)
        try setFlag(SQLITE_DBCONFIG_ENABLE_FKEY, configuration.foreignKeysEnabled, handle)
        sqlite3_busy_timeout(handle, Int32(clamping: max(0, configuration.busyTimeout.milliseconds)))

        // Reading the schema here turns "file is not a database" into an error at open, not later.
        try execute(sql: "SELECT count(*) FROM sqlite_schema")
        if !configuration.readonly {
            if !isInMemory {
                let mode = try switchJournalMode()
                if mode?.uppercased() != configuration.journalMode.rawValue {
                    throw DatabaseError(
                        resultCode: .error,
                        message:
                            "journal_mode \(configuration.journalMode.rawValue) was refused (SQLite kept \(mode ?? "nothing")); the file system may not support it"
                    )
                }
            }
            try execute(sql: "PRAGMA synchronous = \(configuration.synchronous.rawValue)")
        }
        // Negative: KiB, not pages, whatever the page size.
        try execute(sql: "PRAGMA cache_size = \(-max(1, configuration.pageCacheKiB))")
        do {
            try configuration.prepareDatabase?(self)
        } catch let error as DatabaseError {
            throw error.prefixed("Configuration.prepareDatabase failed")
        } catch {
            throw DatabaseError(resultCode: .error, message: "Configuration.prepareDatabase failed: \(error)")
        }
    }

    /// `PRAGMA journal_mode = …`, retried while another connection holds a lock, until the busy
    /// timeout. Switching a file into WAL writes its header from inside the pragma's own read
    /// transaction, and SQLite calls no busy handler when a read must become a write (waiting
    /// could deadlock), so two connections opening a new file at once got SQLITE_BUSY at once
    /// whatever their timeout. See <https://www.sqlite.org/c3ref/busy_handler.html>.
    private func switchJournalMode() throws -> String? {
        let pragma = SQL(sql: "PRAGMA journal_mode = \(configuration.journalMode.rawValue)")
        let deadline = ContinuousClock.now + configuration.busyTimeout
        var pause = Duration.milliseconds(1)
        while true {
            do {
                return try fetchValue(String.self, pragma)
            } catch {
                guard (error as? DatabaseError)?.primaryResultCode == .busy, ContinuousClock.now < deadline else {
                    throw error
                }
                Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18)
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    func setFlag(_ option: Int32, _ enabled: Bool, _ handle: OpaquePointer) throws {
        var current: Int32 = 0
        let code = csqlite_db_config_flag(handle, option, enabled ? 1 : 0, &current)
        guard code == SQLITE_OK else { throw connection.lastError(code: code) }
    }

    /// Turns the triggers stored in the database files on or off for this connection
    /// (`SQLITE_DBCONFIG_ENABLE_TRIGGER`; TEMP triggers are not affected); `action` names what for
    /// in the error on a closed connection.
    /// See <https://www.sqlite.org/c3ref/c_dbconfig_defensive.html#sqlitedbconfigenabletrigger>.
    package func setTriggersInFilesEnabled(_ enabled: Bool, for action: String) throws {
        try setFlag(SQLITE_DBCONFIG_ENABLE_TRIGGER, enabled, try connection.handle(for: action))
    }

    /// Finalizes cached statements and closes the connection. Statements the
    /// caller still holds fail with a misuse error afterwards; closing twice is a misuse error.
    public func close() throws(DatabaseError) {
        // sqlite3_close_v2 only finishes closing when the last statement is finalized; until
        // then an open transaction would keep its write lock. Reset every statement the
        // caller may still hold and roll back, so the lock goes now.
        if let handle = try? connection.handle(for: "close") {
            var statement = sqlite3_next_stmt(handle, nil)
            while let current = statement {
                sqlite3_reset(current)
                statement = sqlite3_next_stmt(handle, current)
            }
            if sqlite3_get_autocommit(handle) == 0 {
                sqlite3_exec(handle, "ROLLBACK", nil, nil, nil)
            }
        }
        removeHooks()
        changeRecording.finalizeStatements()
        statementCache.removeAll()
        recordInsertStatements.removeAll()
        recentRecordInserts.removeAll()
        recordTables.removeAll()
        recordWritePlans.removeAll()
        try connection.close()
        configuration.logHandler.log(.debug, "closed database", metadata: ["path": path])
    }

    /// Whether the connection is still open.
    public var isOpen: Bool { connection.isOpen }

    /// Whether a transaction is open on this connection.
    /// See <https://www.sqlite.org/c3ref/get_autocommit.html>.
    public var isInsideTransaction: Bool {
        guard let handle = try? connection.handle(for: "isInsideTransaction") else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE. See <https://www.sqlite.org/c3ref/changes.html>.
    public var changesCount: Int {
        guard let handle = try? connection.handle(for: "changesCount") else { return 0 }
        return Int(sqlite3_changes64(handle))
    }

    /// Rows changed since the connection opened.
    public var totalChangesCount: Int {
        guard let handle = try? connection.handle(for: "totalChangesCount") else { return 0 }
        return Int(sqlite3_total_changes64(handle))
    }

    /// The rowid of the last successful INSERT. See <https://www.sqlite.org/c3ref/last_insert_rowid.html>.
    public var lastInsertedRowID: Int64 {
        guard let handle = try? connection.handle(for: "lastInsertedRowID") else { return 0 }
        return sqlite3_last_insert_rowid(handle)
    }
}

@available(*, unavailable, message: "A Database is one connection: share a DatabasePool instead")
extension Database: Sendable {}

extension Duration {
    /// Whole milliseconds, saturating instead of overflowing for huge durations.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        let (total, overflowAgain) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
        if overflowAgain { return seconds < 0 ? .min : .max }
        return total
    }
}
