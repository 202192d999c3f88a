import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import TestSupport

/// A device: a Reminders store (2.0, or an older release) and its engine over libcurl (to a
/// server or a ``FaultProxy``), with what its change log recorded as this site's own changes (the
/// merge model's input).
final class SyncPeer {
    /// The synced tables compared across sites, each with the key expression its change log uses.
    static let tables: [(name: String, key: String)] = [
        ("remindersLists", "id"), ("reminders", "id"), ("tags", "id"),
        ("reminderTags", "quote(reminderID) || ',' || quote(tagID)"),
    ]

    /// Columns 2.0 derives from others after every pulled page (``ReleaseTwoDerivations``), by table.
    static let derivedColumns: [String: Set<String>] = ["reminders": ["dueAt"]]

    let name: String
    /// The app release the store was migrated to (nil: the newest, 2.0).
    let release: Schema.Version?
    let db: Database
    let log: ChangeLog
    let engine: SyncEngine
    /// The same sync over libcurl's default timeouts, for syncs that must complete on a quiet
    /// network however loaded the machine is.
    let patientEngine: SyncEngine
    let site: Data
    /// The log's sequence number up to which this site's entries were read into the model.
    private var capturedThrough: Int64 = 0
    /// This device's entries read into the model, by row, column, clock and site. The log moves an entry
    /// to a new place without a new write: when a row comes back from the stash, its own entries
    /// are queued again with their clocks (`ChangeLog.applyStash`), and the row may be gone by the
    /// time the harness reads them (a delete pulled in the same sync).
    private var captured: Set<CapturedEntry> = []
    /// Where the store's database is.
    let databasePath: String
    /// Opens the store again, as a new peer with this one's settings, migrated to a release.
    private let reopen: (Schema.Version?) throws -> SyncPeer

    /// With `derivesReleaseTwo`, a peer on 2.0 runs the app's step after every pulled page, as the
    /// Reminders app does (``ReleaseTwoDerivations``: `dueAt` from older peers' `dueDate`).
    init(
        name: String, path: String, server: URL, dataset: String, token: String,
        transport: HTTPClient.Configuration = HTTPClient.Configuration(), batchSize: Int = 1_000, pageSize: Int = 1_000,
        retry: RetryPolicy = SyncPeer.immediateRetries, release: Schema.Version? = nil, derivesReleaseTwo: Bool = false
    ) throws {
        self.name = name
        self.release = release
        databasePath = path
        reopen = { release in
            try SyncPeer(
                name: name, path: path, server: server, dataset: dataset, token: token, transport: transport,
                batchSize: batchSize, pageSize: pageSize, retry: retry, release: release,
                derivesReleaseTwo: derivesReleaseTwo)
        }
        db = try Database(path: path)
        log = try ChangeLog.open(
            db, migrator: try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: release))
        site = log.identity.siteID
        var configuration = SyncEngine.Configuration(server: server, dataset: dataset, token: token)
        configuration.pushBatchSize = batchSize
        configuration.pullPageSize = pageSize
        configuration.retry = retry
        engine = SyncEngine(
            db: db, log: log, transport: try HTTPClient(configuration: transport), configuration: configuration)
        configuration.retry.maximumAttempts = 10
        patientEngine = SyncEngine(db: db, log: log, transport: try HTTPClient(), configuration: configuration)
        if derivesReleaseTwo && release == nil {
            engine.afterApplyingChanges = ReleaseTwoDerivations.apply
            patientEngine.afterApplyingChanges = ReleaseTwoDerivations.apply
        }
    }

    /// The same device after the app was upgraded to `release` (nil: the newest, 2.0): the store
    /// closed, opened again and migrated (which applies what its stash waited for), with the same
    /// engine settings, and capturing this site's changes from where this peer stopped.
    func upgraded(to release: Schema.Version?) throws -> SyncPeer {
        try db.close()
        return try reopened(release: release, capturingAfter: capturedThrough)
    }

    /// The same device after another process used its files (a sync in a child process): the
    /// store closed while `body` runs (on ``databasePath``), then opened again as that process
    /// left it, at the release its files reached (the other process may be a newer app, which
    /// upgraded them), capturing this site's changes from where this peer stopped.
    func reopened(after body: () throws -> Void) throws -> SyncPeer {
        try db.close()
        try body()
        let files = try Database(path: databasePath)
        let version = try Migrator(plan: RemindersMigrationPlan.self).currentVersion(files)
        try files.close()
        let newest = RemindersMigrationPlan.schemas.last?.versionIdentifier
        return try reopened(release: version == newest ? nil : version ?? release, capturingAfter: capturedThrough)
    }

    /// Which of a store's two files the system purged.
    enum PurgedFile {
        case database, metadatabase
    }

    /// The same device after the system purged one of its files while the app was not running: the
    /// store closed, the file (with its WAL and shared memory) deleted, and the store opened again
    /// (``Metadatabase`` then finds it `databaseRecreated` or `metadatabaseRecreated`). A new
    /// metadatabase has a new log, captured from its start.
    func purged(_ file: PurgedFile) throws -> SyncPeer {
        try db.close()
        let purgedPath = file == .database ? databasePath : Metadatabase.path(forDatabaseAt: databasePath)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: purgedPath + suffix) {
            try FileManager.default.removeItem(atPath: purgedPath + suffix)
        }
        return try reopened(release: release, capturingAfter: file == .database ? capturedThrough : 0)
    }

    private func reopened(release: Schema.Version?, capturingAfter sequence: Int64) throws -> SyncPeer {
        let peer = try reopen(release)
        peer.capturedThrough = sequence
        peer.captured = captured
        return peer
    }

    /// Four attempts, no waiting between them.
    static var immediateRetries: RetryPolicy {
        var retry = RetryPolicy(maximumAttempts: 4)
        retry.sleep = { _ in }
        return retry
    }

    /// How many rows `table` holds.
    func count(_ table: String) throws -> Int {
        try db.fetchValue(Int.self, "SELECT count(*) FROM main.\(identifier: table)") ?? -1
    }

    /// This site's own changes recorded since the last call (a local write, or a child removed
    /// with its deleted parent while applying), each with the clock the log gave it and the values
    /// it wrote.
    func capture() throws -> [ModelEvent] {
        try log.foldJournal(db)
        let entries = try db.fetchAll(
            """
            SELECT c.seq, t.name, c.pk, c.columnName, c.clock FROM ostore_meta.ostore_changes AS c
            JOIN ostore_meta.ostore_tables AS t ON t.id = c.tableID
            WHERE c.site = 0 AND c.seq > \(capturedThrough) ORDER BY c.seq
            """)
        var events: [ModelEvent] = []
        for entry in entries {
            capturedThrough = max(capturedThrough, try entry.decode(at: 0))
            let table: String = try entry.decode(at: 1)
            let key: String = try entry.decode(at: 2)
            let column: String = try entry.decode(at: 3)
            let version = ModelVersion(clock: try entry.decode(at: 4), site: site)
            // An entry queued again is the write read before, not a new one.
            let read = CapturedEntry(table: table, key: key, column: column, clock: version.clock, site: site)
            guard captured.insert(read).inserted else { continue }
            guard column != "-" else {
                events.append(ModelEvent(table: table, key: key, kind: .delete, values: [:], version: version))
                continue
            }
            // Read right after the write that logged it, the row holds what the write wrote. A
            // derived column is written after each pulled page, and a later page of the same sync
            // may delete the row; the model does not follow derived columns.
            guard let row = try row(table, key) else {
                if Self.derivedColumns[table]?.contains(column) == true { continue }
                throw ConvergenceFailure("\(name): \(table)[\(key)] has a log entry for \(column) but no row")
            }
            if column.isEmpty {
                events.append(ModelEvent(table: table, key: key, kind: .insert, values: row, version: version))
            } else {
                events.append(
                    ModelEvent(
                        table: table, key: key, kind: .update, values: [column: row[column] ?? .null], version: version)
                )
            }
        }
        return events
    }

    func row(_ table: String, _ key: String) throws -> [String: DatabaseValue]? {
        let expression = Self.tables.first { $0.name == table }!.key
        return try db.fetchOne(
            SQL(sql: "SELECT * FROM main.\(quoteIdentifier(table)) WHERE \(expression) = ") + "\(key)"
        )?.valuesByColumnName()
    }

    /// Every synced table's rows, keyed like the change log keys them.
    func contents() throws -> TableContents {
        var contents = TableContents()
        for (table, expression) in Self.tables {
            var rows: [String: [String: DatabaseValue]] = [:]
            for row in try db.fetchAll(
                SQL(sql: "SELECT \(expression) AS ostore_key, * FROM main.\(quoteIdentifier(table))"))
            {
                var values = try row.valuesByColumnName()
                guard case .text(let key) = values.removeValue(forKey: "ostore_key") else { continue }
                rows[key] = values
            }
            contents[table] = rows
        }
        return contents
    }
}

/// One entry of a site's change log as the model read it: a write to a row's column (`""` the row's
/// insert, `"-"` its delete) at a clock, by a site (a purged metadatabase gives the device a new one).
private struct CapturedEntry: Hashable {
    var table: String
    var key: String
    var column: String
    var clock: Int64
    var site: Data
}

struct ConvergenceFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
