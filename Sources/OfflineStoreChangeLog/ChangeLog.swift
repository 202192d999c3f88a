import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// A store's change log on one connection: the metadatabase attached, the app's migrations run,
/// the tracking triggers installed for the schema the database is at, and the queue of local
/// changes waiting to be pushed.
///
/// ```swift
/// let db = try Database(path: path)
/// let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
/// try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(UUID().uuidString), \("Home"))")
/// for change in try log.pendingChanges(db, limit: 100) { print(change.table, change.operation) }
/// try log.markPushed(db, upTo: lastAcknowledged)
/// ```
///
/// Reading the queue streams in batches (`limit`) in commit order; values are read from the rows
/// themselves at push time, so the log holds keys and clocks only.
public struct ChangeLog: Sendable {
    public let identity: StoreIdentity
    package let clock: HybridLogicalClock
    package let schema: SchemaSnapshot

    /// Attaches the metadatabase, migrates the database, and installs tracking on this connection.
    /// Call it on every connection that writes; with a ``DatabasePool``, on its writer:
    /// `let log = try pool.writeWithoutTransaction { db in try ChangeLog.open(db, migrator: migrator) }`
    /// (readers are read-only and need nothing).
    public static func open(_ db: Database, migrator: Migrator) throws -> ChangeLog {
        let identity = try Metadatabase.attach(to: db)
        try migrator.migrate(db)
        guard let version = try migrator.currentVersion(db), let schema = migrator.declaredSchema(version) else {
            throw ChangeLogError(.metadatabase, "the database has no schema version after migrating")
        }
        let clock = try ClockRegistry.clock(for: db)
        try ChangeTracker.install(on: db, schema: schema, clock: clock)
        let log = ChangeLog(identity: identity, clock: clock, schema: schema)
        try log.reconcileCoverage(db)
        // The clock caught up with the newest the files hold: beyond the bound, they hold changes
        // stamped while the wall clock ran ahead.
        if clock.lastIssued > clock.driftBound { try log.restampClocksAhead(db) }
        // A migration may have added the tables and columns stashed changes were waiting for.
        _ = try log.applyStash(db)
        return log
    }

    /// Up to `limit` pending changes after the last acknowledged push, oldest first. It folds
    /// the change journal first (``foldJournal(_:)``), a large one only as far as the batch needs
    /// (the rest is folded by the calls for the next batches, while a sync's earlier batches are
    /// on their way); on a connection that may not write (a pool's reader), it reads the journal
    /// and the keyed log together instead, which costs a pass over the journal per call.
    public func pendingChanges(_ db: Database, after sequence: Int64? = nil, limit: Int = 500) throws
        -> [PendingChange]
    {
        try pendingChanges(db, after: sequence, limit: limit) { entry in
            PendingChange(
                sequence: entry.sequence, table: entry.table,
                primaryKey: Dictionary(uniqueKeysWithValues: zip(entry.keyColumns, entry.keyValues)),
                operation: entry.operation,
                columns: Dictionary(zip(entry.columns, entry.values), uniquingKeysWith: { first, _ in first }),
                clock: entry.clock)
        }
    }

    /// ``pendingChanges(_:after:limit:)`` made into the caller's own type by `convert`, from each
    /// change's values by position: the sync engine builds its wire changes so, without a
    /// ``PendingChange`` and its two dictionaries in between.
    package func pendingChanges<Converted>(
        _ db: Database, after sequence: Int64?, limit: Int, _ convert: (PendingEntry) throws -> Converted
    ) throws -> [Converted] {
        // SQLite reads `LIMIT -1` as no limit: nothing is asked for, nothing is read.
        guard limit > 0 else { return [] }
        let log = try ChangeJournal.readableLog(
            db, fold: true, ahead: (sequence: try sequence ?? pushedSequence(db), count: limit))
        // One read transaction for the batch: in autocommit mode every row read took and released
        // the WAL's read lock (two fcntl calls, 200,000 for a push of 100,000 changes) and checked
        // the files for changes.
        return try db.transaction(.deferred) { db in
            var after = try sequence ?? pushedSequence(db)
            var changes: [Converted] = []
            changes.reserveCapacity(min(limit, 10_000))
            var tables = PendingTables(schema: schema)
            // The next `limit` entries all of one table with a one-column key (a bulk of inserts or
            // edits, the usual batch): read with their rows by one statement.
            if let (id, table) = try tables.soleTable(after: after, limit: limit, in: log, db) {
                let read = try table.joinedEntries(tableID: id, after: after, limit: limit, in: log, db) {
                    changes.append(try convert($0))
                }
                // Fewer entries than asked for: the queue ends there.
                guard read.count == limit, changes.count < limit else { return changes }
                after = read.last
            }
            let entries = try db.cachedStatement(
                """
                SELECT c.seq, c.tableID, t.name, c.pk, c.columnName, c.clock
                FROM \(log) AS c JOIN \(quoteIdentifier(Metadatabase.schemaName)).ostore_tables AS t ON t.id = c.tableID
                WHERE c.seq > ? AND c.site = 0 ORDER BY c.seq
                """)
            defer { entries.reset() }
            try entries.bind(.integer(after), toParameter: 1)
            // Entries with nothing to push (a row changed and then deleted before the delete's own
            // entry, a table gone from the schema) are passed over; reading goes on until the batch
            // is full or the queue ends, so an empty batch always means an empty queue.
            while changes.count < limit, try entries.step(arguments: nil) {
                guard case .integer(let tableID) = try entries.value(at: 1),
                    let table = try tables.table(tableID, named: { try entries.value(at: 2) }, db)
                else { continue }
                guard let entry = try table.entry(entries, in: log, db) else { continue }
                changes.append(try convert(entry))
            }
            return changes
        }
    }

    /// Acknowledges every change up to `sequence` as pushed.
    public func markPushed(_ db: Database, upTo sequence: Int64) throws {
        try db.execute(
            """
            UPDATE \(identifier: Metadatabase.schemaName).ostore_store
            SET pushedSeq = max(pushedSeq, \(sequence)), lastClock = max(lastClock, \(clock.lastIssued.packed))
            WHERE id = 1
            """)
    }

    /// How many log entries wait to be pushed. Outside a transaction, on a connection that may
    /// write, it folds the change journal first (``foldJournal(_:)``); otherwise (a pool's reader,
    /// or inside a transaction, where a fold could fail to take the write lock) it counts the
    /// journal and the keyed log together, with the same result.
    public func pendingCount(_ db: Database) throws -> Int {
        let log = try ChangeJournal.readableLog(db, fold: !db.isInsideTransaction)
        return try db.fetchValue(
            Int.self,
            SQL(
                sql: "SELECT count(*) FROM \(log) WHERE seq > ? AND site = 0",
                arguments: [.integer(try pushedSequence(db))])) ?? 0
    }

    /// Moves the change journal, where the tracking triggers append each change, into the keyed
    /// log, coalescing each row's column to its latest change, in one transaction (a savepoint in
    /// the caller's). Reading the queue, applying remote changes and a rescan do it first; an app
    /// may call it when idle, so the next push does not. Returns how many journal entries it moved.
    ///
    /// ```swift
    /// try pool.writeWithoutTransaction { db in try log.foldJournal(db) }
    /// ```
    ///
    /// See <https://www.sqlite.org/lang_upsert.html>.
    @discardableResult
    package func foldJournal(_ db: Database) throws -> Int {
        try ChangeJournal.fold(db)
    }

    package func pushedSequence(_ db: Database) throws -> Int64 {
        try db.fetchValue(
            Int64.self, "SELECT pushedSeq FROM \(identifier: Metadatabase.schemaName).ostore_store WHERE id = 1")
            ?? 0
    }
}

/// One clock per metadatabase per process, shared by every connection to the store.
///
/// Another process may use the same store at the same time (the app and its sync daemon): each
/// has a clock of its own, and what one issues or receives must order the other's later writes
/// after it, or a local edit made after a pulled one could carry an older clock and lose to it on
/// every other device. So a clock catches up with the newest clock the files hold (``newestSQL``)
/// at the start of each transaction that issues clocks after the metadatabase changed: the
/// tracking triggers' `ostore_clock()` does it in C (see `sql_clock` in
/// CChangeTracking), the apply with ``catchUp(_:_:)``.
enum ClockRegistry {
    private static let lock = NSLock()
    // `nonisolated(unsafe)`: read and written only inside `lock.withLock` below.
    nonisolated(unsafe) private static var clocks: [String: HybridLogicalClock] = [:]

    /// The newest clock the store's files hold: the persisted last clock (which an apply raises to
    /// what it received, and to every clock issued before it), and the newest entries of the
    /// journal and of the keyed log (local writes append there in the order of their clocks).
    static let newestSQL: String = {
        let meta = quoteIdentifier(Metadatabase.schemaName)
        return """
            SELECT max(
                coalesce((SELECT lastClock FROM \(meta).ostore_store WHERE id = 1), 0),
                coalesce((SELECT clock FROM \(meta).\(quoteIdentifier(ChangeJournal.tableName)) ORDER BY seq DESC LIMIT 1), 0),
                coalesce((SELECT clock FROM \(meta).ostore_changes ORDER BY seq DESC LIMIT 1), 0))
            """
    }()

    /// The newest clock the store's files hold (``newestSQL``).
    private static func newest(_ db: Database) throws -> ChangeClock {
        try db.fetchValue(Int64.self, SQL(sql: newestSQL)).flatMap(ChangeClock.init(packed:)) ?? .zero
    }

    /// Moves `clock` past the newest clock the store's files hold, which another process may have
    /// written; call it inside the transaction that will issue clocks.
    static func catchUp(_ clock: HybridLogicalClock, _ db: Database) throws {
        clock.catchUp(to: try newest(db))
    }

    /// The store's clock in this process, past the newest clock its files hold.
    static func clock(for db: Database) throws -> HybridLogicalClock {
        let last = try newest(db)
        let path = Metadatabase.path(forDatabaseAt: db.path)
        return lock.withLock {
            if let clock = clocks[path] {
                clock.catchUp(to: last)
                return clock
            }
            let clock = HybridLogicalClock(lastIssued: last)
            clocks[path] = clock
            return clock
        }
    }
}

extension ChangeLog {
    /// The change log of a store for maintenance tools that do not have the app's migration plan
    /// (`ostore rescan`, `ostore check`): the metadatabase must exist; the synced tables are the
    /// ones the log tracks, read from the live file. No tracking triggers are installed, so do not
    /// write user tables through this connection.
    package static func openForMaintenance(_ db: Database) throws -> ChangeLog {
        guard FileManager.default.fileExists(atPath: Metadatabase.path(forDatabaseAt: db.path)) else {
            throw ChangeLogError(
                .metadatabase, "\(db.path) has no change log: there is no \(Metadatabase.path(forDatabaseAt: db.path))",
                fix: "open the store with the app first")
        }
        let identity = try Metadatabase.attach(to: db)
        let tracked = Set(
            try db.fetchAll(String.self, "SELECT name FROM \(identifier: Metadatabase.schemaName).ostore_tables")
                .map { $0.lowercased() })
        var tables = try SchemaSnapshot(liveDatabase: db).tables
        for index in tables.indices {
            tables[index].sync = tracked.contains(tables[index].name.lowercased()) ? .synced : .localOnly
        }
        let schema = SchemaSnapshot(liveTables: tables)
        let clock = try ClockRegistry.clock(for: db)
        return ChangeLog(identity: identity, clock: clock, schema: schema)
    }
}
