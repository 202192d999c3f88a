import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// Reads a store's change log from its two files alone, without the app's code or migration plan:
/// for tools such as `ostore log` and `ostore status`, and for an app that wants to show its queue.
///
/// ```swift
/// let db = try Database(path: path, configuration: readOnly)
/// if let summary = try ChangeLogReader.summary(in: db) { print(summary.pendingChanges, "to push") }
/// for change in try ChangeLogReader.entries(in: db, pendingOnly: true, limit: 100) {
///     print(change.table, change.operation, change.key)
/// }
/// ```
///
/// On a connection where ``ChangeLog/open(_:migrator:)`` attached the metadatabase, it reads
/// through that attachment. Otherwise it attaches the metadatabase read-only (`mode=ro`) for the
/// duration of the call and detaches it afterwards, so it never creates, migrates or changes a
/// file; such a call cannot run inside a transaction (SQLite refuses ATTACH there). Each call
/// reads one snapshot of both files. Since it never writes, it never folds the change journal:
/// it reads the journal and the keyed log together, as a fold would leave them
/// (``ChangeJournal/foldedLog(_:)``), so its counts and entries are what the app would see.
///
/// Without the declared schema, the key columns of a table are taken from the file's own schema;
/// for a table no longer in the file, a composite key is recognised by the form the triggers
/// write (see ``LoggedChange/key``).
package enum ChangeLogReader {
    /// The schema name of the reader's own read-only attachment, apart from ``Metadatabase/schemaName``
    /// so a later ``Metadatabase/attach(to:)`` on the same connection never mistakes it for its own.
    static let readOnlySchemaName = "ostore_meta_readonly"

    /// The store's identity and how many changes wait to be pushed; nil when the database has no
    /// metadatabase beside it (the app never opened its change log), or is in memory.
    package static func summary(in db: Database) throws -> ChangeLogSummary? {
        try withMetadatabase(of: db) { meta in
            try db.savepoint { db in
                let record = try storeRecord(db, meta: meta)
                let log = try ChangeJournal.readableLog(db, meta: meta, fold: false)
                let pending =
                    try db.fetchValue(
                        Int.self,
                        SQL(
                            sql: "SELECT count(*) FROM \(log) WHERE seq > ? AND site = 0",
                            arguments: [.integer(record.pushedSequence)]))
                    ?? 0
                return ChangeLogSummary(storeID: record.storeID, siteID: record.siteID, pendingChanges: pending)
            }
        }
    }

    /// The log's entries: local changes in the order they were made (`sequence`), then, unless
    /// `pendingOnly`, changes from other sites in clock order. `pendingOnly` keeps the local changes
    /// after the last acknowledged push; `limit` caps the count (nil for all).
    /// Throws ``ChangeLogError`` (`.metadatabase`) when there is no metadatabase.
    package static func entries(in db: Database, pendingOnly: Bool = false, limit: Int? = nil) throws
        -> [LoggedChange]
    {
        var entries: [LoggedChange] = []
        try forEachEntry(in: db, pendingOnly: pendingOnly, limit: limit) { entries.append($0) }
        return entries
    }

    /// ``entries(in:pendingOnly:limit:)`` one at a time, for a log too long to hold: `body` sees
    /// each entry as it is read.
    package static func forEachEntry(
        in db: Database, pendingOnly: Bool = false, limit: Int? = nil, _ body: (LoggedChange) throws -> Void
    ) throws {
        let found: Void? = try withMetadatabase(of: db) { meta in
            try db.savepoint { db in
                try readEntries(db, meta: meta, pendingOnly: pendingOnly, limit: limit, body)
            }
        }
        guard found != nil else {
            throw ChangeLogError(
                .metadatabase,
                "there is no metadatabase \(Metadatabase.path(forDatabaseAt: db.path)), so no change log",
                fix: "the log is kept there once the app opens the store with ChangeLog.open")
        }
    }

    private static func readEntries(
        _ db: Database, meta: String, pendingOnly: Bool, limit: Int?, _ body: (LoggedChange) throws -> Void
    ) throws {
        let record = try storeRecord(db, meta: meta)
        var remaining = limit.map { max($0, 0) }
        // Keys are decoded with the key column count of the table as the file declares it now.
        var keyColumnCounts: [String: Int] = [:]
        func emit(_ row: Row) throws {
            let site: Int64 = try row.decode(at: 1)
            // Remote entries hold a place in the queue too (so it never runs backwards), but only
            // local ones are pushed, so only theirs is shown.
            let sequence: Int64? = site == 0 ? try row.decode(at: 0) : nil
            let remoteSite: Data? = try row.decode(at: 6)
            let table: String = try row.decode(at: 3)
            let stored: DatabaseValue = try row.decode(at: 4)
            let logged = LoggedColumn(stored: try row.decode(String.self, at: 5))
            if keyColumnCounts[table] == nil {
                keyColumnCounts[table] =
                    try db.fetchValue(
                        Int.self, "SELECT count(*) FROM pragma_table_info(\(table), 'main') WHERE pk > 0") ?? 0
            }
            let keyColumnCount = keyColumnCounts[table] ?? 0
            let key: [DatabaseValue]
            if keyColumnCount == 0 {
                key = LoggedKey.values(guessing: stored)
            } else {
                // A table whose key changed since the entry was logged: show what can be read.
                key =
                    (try? LoggedKey.values(stored, columnCount: keyColumnCount)) ?? LoggedKey.values(guessing: stored)
            }
            let operation: PendingChange.Operation
            let columns: [String]
            switch logged {
            case .creation: (operation, columns) = (.insert, [])
            case .deletion: (operation, columns) = (.delete, [])
            case .column(let name): (operation, columns) = (.update, [name])
            }
            try body(
                LoggedChange(
                    sequence: sequence,
                    site: site == 0
                        ? record.siteID
                        : remoteSite.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "#\(site)",
                    clock: ChangeClock(packed: try row.decode(at: 2)) ?? .zero, table: table, key: key,
                    operation: operation, columns: columns,
                    isPending: sequence.map { $0 > record.pushedSequence } ?? false))
            remaining = remaining.map { $0 - 1 }
        }
        let log = try ChangeJournal.readableLog(db, meta: meta, fold: false)
        let columns = SQL(
            sql: """
                SELECT c.seq, c.site, c.clock, t.name, c.pk, c.columnName, s.siteID
                FROM \(log) AS c JOIN \(quoteIdentifier(meta)).ostore_tables AS t ON t.id = c.tableID
                LEFT JOIN \(quoteIdentifier(meta)).ostore_sites AS s ON s.id = c.site
                """)
        // Local entries by their sequence (the rowid), then remote ones by clock.
        // LIMIT -1 is SQLite's "no limit".
        let local = try db.fetchCursor(
            """
            \(columns) WHERE c.seq > \(pendingOnly ? record.pushedSequence : 0) AND c.site = 0
            ORDER BY c.seq LIMIT \(remaining ?? -1)
            """)
        while let row = try local.next() { try emit(row) }
        guard !pendingOnly, (remaining ?? 1) > 0 else { return }
        let remote = try db.fetchCursor(
            """
            \(columns) WHERE c.site <> 0
            ORDER BY c.clock, c.tableID, c.pk, c.columnName LIMIT \(remaining ?? -1)
            """)
        while let row = try remote.next() { try emit(row) }
    }

    private struct StoreRecord {
        var storeID: String
        var siteID: String
        var pushedSequence: Int64
    }

    /// The metadatabase's store record, checked against the store id the database itself carries.
    private static func storeRecord(_ db: Database, meta: String) throws -> StoreRecord {
        guard try db.tableExists("ostore_store", schema: meta),
            let row = try db.fetchOne(
                "SELECT storeID, siteID, pushedSeq FROM \(identifier: meta).ostore_store WHERE id = 1")
        else {
            throw ChangeLogError(
                .metadatabase,
                "\(Metadatabase.path(forDatabaseAt: db.path)) holds no store record: it is not a metadatabase, or "
                    + "the app was stopped while creating it",
                fix: "open the store with the app, which completes or recreates it")
        }
        let storeID: String = try row.decode(at: 0)
        if try db.tableExists(StoreIdentity.mainTableName),
            let mainStoreID = try db.fetchValue(
                String.self, "SELECT storeID FROM main.\(identifier: StoreIdentity.mainTableName) WHERE id = 1"),
            mainStoreID != storeID
        {
            throw ChangeLogError(
                .metadatabase,
                "the metadatabase \(Metadatabase.path(forDatabaseAt: db.path)) belongs to store \(storeID), but the "
                    + "database is store \(mainStoreID): its log is not this database's",
                fix: "a metadatabase was copied or restored beside the wrong database; the app refuses it too")
        }
        let siteID: Data = try row.decode(at: 1)
        return StoreRecord(
            storeID: storeID, siteID: siteID.map { String(format: "%02x", $0) }.joined(),
            pushedSequence: try row.decode(at: 2))
    }

    /// The newest sequence number in the log or its journal; nil without a metadatabase or entries.
    static func newestSequence(in db: Database) throws -> Int64? {
        try withMetadatabase(of: db) { meta in try ChangeJournal.newestSequence(db, meta: meta) } ?? nil
    }

    /// Runs `body` with the schema name the metadatabase is attached under: the store's own
    /// attachment when there is one, else a read-only one made for the call. nil when the database
    /// has no metadatabase file.
    private static func withMetadatabase<Result>(of db: Database, _ body: (String) throws -> Result) throws
        -> Result?
    {
        let attached = try db.fetchAll(String.self, "SELECT name FROM pragma_database_list")
        for name in [Metadatabase.schemaName, readOnlySchemaName] where attached.contains(name) {
            return try body(name)
        }
        guard !db.path.isEmpty, db.path != ":memory:" else { return nil }
        let metaPath = Metadatabase.path(forDatabaseAt: db.path)
        // ATTACH would create a missing file (on a writable connection): look first.
        guard FileManager.default.fileExists(atPath: metaPath) else { return nil }
        try db.execute("ATTACH DATABASE \(readOnlyURI(metaPath)) AS \(identifier: readOnlySchemaName)")
        // A failed DETACH (a statement still reading) leaves a read-only attachment under a name
        // nothing else uses, which the next call reuses.
        defer { try? db.execute("DETACH DATABASE \(identifier: readOnlySchemaName)") }
        return try body(readOnlySchemaName)
    }

    /// `file:` URI opening `path` read-only: absolute (an authority-less `file://` URI), with every
    /// byte but unreserved ones and `/` percent-encoded so `?`, `#` and `%` in names stay part of the
    /// path. See <https://www.sqlite.org/uri.html>.
    static func readOnlyURI(_ path: String) -> String {
        let absolute =
            path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var encoded = ""
        for byte in absolute.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                encoded.append(Character(Unicode.Scalar(byte)))
            default:
                encoded += String(format: "%%%02X", byte)
            }
        }
        return "file://" + encoded + "?mode=ro"
    }
}
