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
        work.sort { a, b in
            (a.datasetID, a.handed.change.table, a.handed.key, a.serial)
                < (b.datasetID, b.handed.change.table, b.handed.key, b.serial)
        }
        let statements = try FoldStatements(db)
        for item in work {
            try merge(item.handed.change, key: item.handed.key, datasetID: item.datasetID, statements, db)
        }
        for (datasetID, serial) in folded.serials {
            try db.execute("UPDATE server_datasets SET foldedSerial = \(serial) WHERE id = \(datasetID)")
        }
        return folded
    }

    /// Folds one change into the current state by the protocol's merge rule, so a snapshot
    /// gives a new client what applying the whole log would.
    private static func merge(
        _ change: Change, key: String, datasetID: Int64, _ statements: FoldStatements, _ db: Database
    ) throws {
        let incoming = ChangeVersion(clock: change.clock.packed, site: change.site.bytes)
        let row = try db.fetchOne(
            SQL(sql: FoldStatements.selectRow, arguments: [.integer(datasetID), .text(change.table), .text(key)]))
        let created = try row.flatMap { row in try version(row, clockAt: 0) }
        let deleted = try row.flatMap { row in try version(row, clockAt: 2) }
        let isDeleted = deleted.map { deleted in created.map { deleted > $0 } ?? true } ?? false
        let isLive = created != nil && !isDeleted

        func setRow(createdBy: ChangeVersion?, deletedBy: ChangeVersion?) throws {
            try statements.upsertRow.execute(
                datasetID, change.table, key, createdBy?.clock, createdBy?.site, deletedBy?.clock, deletedBy?.site)
        }
        func mergeColumns(creation: ChangeVersion?) throws {
            for (name, value) in change.columns where change.key[name] == nil {
                // Cells are written only after their row (setRow comes first), so a row that did
                // not exist before this change has none to look up.
                let cell =
                    row == nil
                    ? nil
                    : try db.fetchOne(
                        SQL(
                            sql: FoldStatements.selectCell,
                            arguments: [.integer(datasetID), .text(change.table), .text(key), .text(name)]))
                if let cell, let local = try version(cell, clockAt: 0) {
                    guard incoming > local else { continue }
                } else if incoming < (creation ?? ChangeVersion(clock: 0, site: Data())) {
                    continue
                }
                try statements.upsertCell.execute(
                    datasetID, change.table, key, name, value.databaseValue, incoming.clock, incoming.site)
            }
        }

        switch change.op {
        case .delete:
            // Delete wins over updates of the row; only a newer insert brings it back.
            let oldest = ChangeVersion(clock: -1, site: Data())
            guard incoming > (created ?? oldest), incoming > (deleted ?? oldest) else { return }
            try setRow(createdBy: created, deletedBy: incoming)
            try statements.deleteCells.execute(datasetID, change.table, key)
        case .insert:
            if let deleted, deleted > incoming { return }
            if !isLive {
                // A new row, or one brought back (a delete dropped its cells): every column is
                // written unless an update that arrived before the insert left a newer value, as
                // a client applies such an update from its stash after the insert.
                try setRow(createdBy: incoming, deletedBy: deleted)
                try mergeColumns(creation: nil)
                return
            }
            try mergeColumns(creation: created)
            if incoming > created! { try setRow(createdBy: incoming, deletedBy: deleted) }
        case .update:
            if isDeleted { return }
            if row == nil { try setRow(createdBy: nil, deletedBy: nil) }
            try mergeColumns(creation: created)
        }
    }

    private static func version(_ row: Row, clockAt index: Int) throws -> ChangeVersion? {
        guard let clock = try row.decode(Int64?.self, at: index), let site = try row.decode(Data?.self, at: index + 1)
        else { return nil }
        return ChangeVersion(clock: clock, site: site)
    }
}

/// The statements a fold runs for every change, looked up in the connection's cache once per
/// fold and bound value by value: building each statement's SQL text by interpolation, finding
/// it in the cache by that text and boxing its arguments cost about as much as SQLite's work.
private struct FoldStatements {
    static let selectRow = """
        SELECT createdClock, createdSite, deletedClock, deletedSite FROM server_rows
        WHERE datasetID = ? AND tableName = ? AND key = ?
        """
    static let selectCell = """
        SELECT clock, site FROM server_cells WHERE datasetID = ? AND tableName = ? AND key = ? AND columnName = ?
        """

    let upsertRow: Statement
    let upsertCell: Statement
    let deleteCells: Statement

    init(_ db: Database) throws {
        upsertRow = try db.cachedStatement(
            """
            INSERT INTO server_rows (datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key) DO UPDATE SET
                createdClock = excluded.createdClock, createdSite = excluded.createdSite,
                deletedClock = excluded.deletedClock, deletedSite = excluded.deletedSite
            """)
        upsertCell = try db.cachedStatement(
            """
            INSERT INTO server_cells (datasetID, tableName, key, columnName, value, clock, site)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key, columnName) DO UPDATE SET
                value = excluded.value, clock = excluded.clock, site = excluded.site
            """)
        deleteCells = try db.cachedStatement(
            "DELETE FROM server_cells WHERE datasetID = ? AND tableName = ? AND key = ?")
    }
}
