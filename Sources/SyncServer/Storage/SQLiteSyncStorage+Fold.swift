import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension SQLiteSyncStorage {
    /// One fold (see ``StateFolder``), in one write transaction: the log entries after each
    /// dataset's `foldedSerial`, up to `limit` in all, taken from `handed` where a push handed them
    /// over and read back from the log otherwise, merged in (dataset, table, key) order, and each
    /// dataset's `foldedSerial` moved to the last serial merged. What `handed` holds beyond that is
    /// left in it.
    static func fold(_ handed: inout StateFolder.Pending, pool: DatabasePool, limit: Int) throws
        -> StateFolder.Folded
    {
        try pool.writeWithoutTransaction { db in
            // The fold's commit need not wait for an fsync: the state is rebuilt from the log,
            // and a fold lost with the power loses its `foldedSerial` with it. The next push's
            // commit fsyncs the WAL, this fold's frames before its own, so durability stays in
            // order.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            let folded = Result { try db.transaction(.immediate) { db in try fold(&handed, limit: limit, db) } }
            do {
                try db.execute(sql: "PRAGMA synchronous = FULL")
            } catch {
                // Setting a flag of an open connection outside a transaction: it cannot fail but
                // by a bug, and then pushes would be acknowledged before their fsync.
                preconditionFailure("the server could not set synchronous = FULL back on its writer: \(error)")
            }
            return try folded.get()
        }
    }

    private static func fold(_ handed: inout StateFolder.Pending, limit: Int, _ db: Database) throws
        -> StateFolder.Folded
    {
        let lagging = try db.fetchAll(
            "SELECT id, foldedSerial, lastSerial FROM server_datasets WHERE foldedSerial < lastSerial ORDER BY id")
        var budget = Int64(limit)
        var work: [(datasetID: Int64, serial: Int64, handed: StateFolder.Handed)] = []
        var folded = StateFolder.Folded(serials: [:], hasMore: false)
        var leftOver: StateFolder.Pending = [:]
        for dataset in lagging {
            let datasetID: Int64 = try dataset.decode(at: 0)
            let from: Int64 = try dataset.decode(at: 1)
            let last: Int64 = try dataset.decode(at: 2)
            guard budget > 0 else {
                folded.hasMore = true
                leftOver[datasetID] = handed[datasetID]
                continue
            }
            var upTo = min(last, from + budget)
            let budgetEnds = upTo < last
            // What pushes handed over, as far as it runs without a gap; a push that has not
            // handed its changes over yet is folded next round. With nothing at the start in
            // memory (after a restart, or pushes of another connection) it is read from the log.
            var contiguous = from
            while contiguous < upTo, handed[datasetID]?[contiguous + 1] != nil { contiguous += 1 }
            let stoppedAtGap = contiguous > from && contiguous < upTo
            if contiguous > from { upTo = contiguous }
            budget -= upTo - from
            var inMemory = handed[datasetID] ?? [:]
            var missing = Set<Int64>()
            for serial in (from + 1)...upTo {
                if let change = inMemory.removeValue(forKey: serial) {
                    work.append((datasetID, serial, change))
                } else {
                    missing.insert(serial)
                }
            }
            if !missing.isEmpty {
                // After a restart, or a push that had not handed its changes over yet.
                let cursor = try db.fetchCursor(
                    """
                    SELECT serial, body FROM server_log
                    WHERE datasetID = \(datasetID) AND serial > \(from) AND serial <= \(upTo) ORDER BY serial
                    """)
                let decoder = JSONDecoder()
                while let row = try cursor.next() {
                    let serial: Int64 = try row.decode(at: 0)
                    guard missing.contains(serial) else { continue }
                    let change = try decoder.decode(
                        Change.self, from: Data(try row.decode(String.self, at: 1).utf8))
                    work.append(
                        (datasetID, serial, StateFolder.Handed(change: change, key: try change.canonicalKeyJSON())))
                }
            }
            let later = inMemory.filter { $0.key > upTo }
            if !later.isEmpty { leftOver[datasetID] = later }
            folded.serials[datasetID] = upTo
            // Only the budget calls for another round at once; a gap in memory waits for its push.
            if budgetEnds && !stoppedAtGap { folded.hasMore = true }
        }
        handed = leftOver
        // Key order for page locality; one key's changes in log order, as they were merged when
        // each push merged its own (Swift's sort is not stable, hence the serial).
        // Compared field by field: a tuple of the four copied each compared element's strings.
        work.sort { a, b in
            if a.datasetID != b.datasetID { return a.datasetID < b.datasetID }
            if a.handed.change.table != b.handed.change.table { return a.handed.change.table < b.handed.change.table }
            if a.handed.key != b.handed.key { return a.handed.key < b.handed.key }
            return a.serial < b.serial
        }
        let statements = try FoldStatements(db)
        var first = work.startIndex
        while first < work.endIndex {
            let item = work[first]
            var next = first + 1
            while next < work.endIndex, work[next].datasetID == item.datasetID,
                work[next].handed.key == item.handed.key, work[next].handed.change.table == item.handed.change.table
            {
                next += 1
            }
            try merge(
                work[first..<next].lazy.map(\.handed.change), table: item.handed.change.table, key: item.handed.key,
                datasetID: item.datasetID, statements, db)
            first = next
        }
        for (datasetID, serial) in folded.serials {
            try db.execute("UPDATE server_datasets SET foldedSerial = \(serial) WHERE id = \(datasetID)")
        }
        return folded
    }

    /// Folds one row's changes of this fold, in log order, into its record: read once, merged in
    /// memory (``MergedRow/merge(_:)``), written once if anything changed.
    private static func merge(
        _ changes: some Sequence<Change>, table: String, key: String, datasetID: Int64, _ statements: FoldStatements,
        _ db: Database
    ) throws {
        let stored = try db.fetchOne(
            SQL(sql: FoldStatements.selectRow, arguments: [.integer(datasetID), .text(table), .text(key)])
        ).map { row in
            try MergedRow(
                created: try version(row, clockAt: 0), deleted: try version(row, clockAt: 2),
                packedCells: try row.decode(Data?.self, at: 4))
        }
        var merged = stored ?? MergedRow()
        for change in changes { merged.merge(change) }
        // A row new to the state is written whatever its changes did, as each one's merge wrote it.
        guard merged != stored else { return }
        try statements.upsertRow.execute(
            datasetID, table, key, merged.created?.clock, merged.created?.site, merged.deleted?.clock,
            merged.deleted?.site, merged.packedCells)
    }

    static func version(_ row: Row, clockAt index: Int) throws -> ChangeVersion? {
        guard let clock = try row.decode(Int64?.self, at: index), let site = try row.decode(Data?.self, at: index + 1)
        else { return nil }
        return ChangeVersion(clock: clock, site: site)
    }
}

/// The statements a fold runs for every row, the write looked up in the connection's cache once
/// per fold and bound value by value: building a statement's SQL text by interpolation, finding
/// it in the cache by that text and boxing its arguments cost about as much as SQLite's work.
private struct FoldStatements {
    static let selectRow = """
        SELECT createdClock, createdSite, deletedClock, deletedSite, cells FROM server_rows
        WHERE datasetID = ? AND tableName = ? AND key = ?
        """

    let upsertRow: Statement

    init(_ db: Database) throws {
        upsertRow = try db.cachedStatement(
            """
            INSERT INTO server_rows (datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key) DO UPDATE SET
                createdClock = excluded.createdClock, createdSite = excluded.createdSite,
                deletedClock = excluded.deletedClock, deletedSite = excluded.deletedSite, cells = excluded.cells
            """)
    }
}
