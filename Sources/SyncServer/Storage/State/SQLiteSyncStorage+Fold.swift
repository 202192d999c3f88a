import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension SQLiteSyncStorage {
    /// One fold (see ``StateFolder``), in one write transaction of `state` (`state.sqlite`): the
    /// log entries after each dataset's `foldedSerial`, up to `limit` in all, taken from `handed`
    /// where a push handed them over and read back from `log` (`server.sqlite`) otherwise, merged in
    /// (dataset, table, key) order, and each dataset's `foldedSerial` moved to the last serial
    /// merged. What `handed` holds beyond that is left in it. `log` is only read, in read
    /// transactions of its own: the log only grows, so what one read sees stays true.
    static func fold(_ handed: inout StateFolder.Pending, log: DatabasePool, state: DatabasePool, limit: Int) throws
        -> StateFolder.Folded
    {
        let lastSerials = try log.read { db in
            try db.fetchAll("SELECT id, lastSerial FROM server_datasets ORDER BY id").map { row in
                (id: try row.decode(Int64.self, at: 0), last: try row.decode(Int64.self, at: 1))
            }
        }
        return try state.write { db in
            var foldedSerials: [Int64: Int64] = [:]
            for row in try db.fetchAll("SELECT datasetID, foldedSerial FROM state_datasets") {
                foldedSerials[try row.decode(at: 0)] = try row.decode(Int64.self, at: 1)
            }
            let lagging = lastSerials.compactMap { dataset in
                let from = foldedSerials[dataset.id] ?? 0
                return from < dataset.last ? (id: dataset.id, from: from, last: dataset.last) : nil
            }
            return try fold(&handed, lagging: lagging, limit: limit, log: log, db)
        }
    }

    private static func fold(
        _ handed: inout StateFolder.Pending, lagging: [(id: Int64, from: Int64, last: Int64)], limit: Int,
        log: DatabasePool, _ db: Database
    ) throws -> StateFolder.Folded {
        var budget = Int64(limit)
        var work = FoldWork()
        var folded = StateFolder.Folded(serials: [:], hasMore: false)
        var leftOver: StateFolder.Pending = [:]
        for (datasetID, from, last) in lagging {
            guard budget > 0 else {
                folded.hasMore = true
                leftOver[datasetID] = handed[datasetID]
                continue
            }
            var upTo = min(last, from + budget)
            let budgetEnds = upTo < last
            let runs = (handed[datasetID] ?? []).compactMap { $0.after(from) }.sorted {
                $0.firstSerial < $1.firstSerial
            }
            // What pushes handed over, as far as it runs without a gap; a push that has not
            // handed its changes over yet is folded next round. With nothing at the start in
            // memory (after a restart, or pushes of another connection) it is read from the log.
            var contiguous = from
            for run in runs {
                guard contiguous < upTo, run.firstSerial == contiguous + 1 else { break }
                contiguous = min(run.endSerial - 1, upTo)
            }
            let stoppedAtGap = contiguous > from && contiguous < upTo
            if contiguous > from { upTo = contiguous }
            budget -= upTo - from
            var inMemory: [ClosedRange<Int64>] = []
            var later: [StateFolder.Run] = []
            for run in runs {
                if run.firstSerial <= upTo {
                    let folding = run.changes.prefix(Int(upTo - run.firstSerial + 1))
                    work.add(folding, firstSerial: run.firstSerial, datasetID: datasetID)
                    inMemory.append(run.firstSerial...(run.firstSerial + Int64(folding.count) - 1))
                }
                if let rest = run.after(upTo) { later.append(rest) }
            }
            if inMemory.reduce(0, { $0 + $1.count }) < upTo - from {
                // After a restart, or a push that had not handed its changes over yet.
                try log.read { logDB in
                    try readBack(
                        datasetID: datasetID, after: from, through: upTo, skipping: inMemory, into: &work, logDB)
                }
            }
            if !later.isEmpty { leftOver[datasetID] = later }
            folded.serials[datasetID] = upTo
            // Only the budget calls for another round at once; a gap in memory waits for its push.
            if budgetEnds && !stoppedAtGap { folded.hasMore = true }
        }
        handed = leftOver
        let statements = try FoldStatements(db)
        var buffers = NewRowBuffers()
        try work.forEachRow { datasetID, changes in
            try merge(changes, datasetID: datasetID, statements, &buffers, db)
        }
        let serials = folded.serials
        let marks = try log.read { logDB in
            try serials.map { datasetID, serial in
                (datasetID, serial, try ServerStateFile.mark(ofSerial: serial, datasetID: datasetID, logDB))
            }
        }
        for (datasetID, serial, mark) in marks {
            try ServerStateFile.record(datasetID: datasetID, foldedSerial: serial, mark: mark, db)
        }
        return folded
    }

    /// The log's changes of dataset `datasetID` after `from` through `upTo` that no range of
    /// `inMemory` (sorted) holds, decoded from their JSON.
    private static func readBack(
        datasetID: Int64, after from: Int64, through upTo: Int64, skipping inMemory: [ClosedRange<Int64>],
        into work: inout FoldWork, _ db: Database
    ) throws {
        let cursor = try db.fetchCursor(
            """
            SELECT serial, body FROM server_log
            WHERE datasetID = \(datasetID) AND serial > \(from) AND serial <= \(upTo) ORDER BY serial
            """)
        let decoder = JSONDecoder()
        var skipped = inMemory.startIndex
        // Consecutive serials read back go in as one run.
        var run = StateFolder.Run(firstSerial: 0, changes: [])
        while let row = try cursor.next() {
            let serial: Int64 = try row.decode(at: 0)
            while skipped < inMemory.endIndex, inMemory[skipped].upperBound < serial { skipped += 1 }
            if skipped < inMemory.endIndex, inMemory[skipped].contains(serial) { continue }
            if serial != run.endSerial {
                if !run.changes.isEmpty { work.add(run.changes, firstSerial: run.firstSerial, datasetID: datasetID) }
                run = StateFolder.Run(firstSerial: serial, changes: [])
            }
            let change = try decoder.decode(Change.self, from: Data(try row.decode(String.self, at: 1).utf8))
            run.changes.append(FoldChange(change, key: try change.canonicalKeyJSON()))
        }
        if !run.changes.isEmpty { work.add(run.changes, firstSerial: run.firstSerial, datasetID: datasetID) }
    }

    /// Folds one row's changes of this fold, in log order, into its record: read once, merged in
    /// memory (``MergedRow/merge(_:)``), written once if anything changed. A row whose first
    /// change is an insert is most likely new to the state: its merge from nothing is inserted
    /// without reading first, and read only if the insert finds the row there. A row whose only
    /// change is an insert, the usual one, has its cells packed straight from the change and its
    /// values bound in place from `buffers`.
    private static func merge(
        _ changes: some Collection<FoldChange>, datasetID: Int64, _ statements: FoldStatements,
        _ buffers: inout NewRowBuffers, _ db: Database
    ) throws {
        guard let first = changes.first else { return }
        if first.op == .insert, changes.count == 1 {
            let arguments = buffers.arguments(datasetID: datasetID, createdBy: first)
            try statements.insertNewRow.execute(arguments)
            if db.changesCount == 1 { return }
        } else if first.op == .insert {
            var merged = MergedRow()
            for change in changes { merged.merge(change) }
            try statements.insertNewRow.execute(
                datasetID, first.table, first.key, merged.created?.clock, merged.created?.site, merged.deleted?.clock,
                merged.deleted?.site, merged.packedCells)
            if db.changesCount == 1 { return }
        }
        let stored = try db.fetchOne(
            SQL(sql: FoldStatements.selectRow, arguments: [.integer(datasetID), .text(first.table), .text(first.key)])
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
            datasetID, first.table, first.key, merged.created?.clock, merged.created?.site, merged.deleted?.clock,
            merged.deleted?.site, merged.packedCells)
    }

    static func version(_ row: Row, clockAt index: Int) throws -> ChangeVersion? {
        guard let clock = try row.decode(Int64?.self, at: index), let site = try row.decode(Data?.self, at: index + 1)
        else { return nil }
        return ChangeVersion(clock: clock, site: site)
    }
}

/// What a fold reuses from one new row to the next: its packed cells and the arguments of its
/// insert (`datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells`).
private struct NewRowBuffers {
    private var cells: [UInt8] = []
    private var bulk = BulkArguments()

    /// The insert's arguments for the row that `insert` alone creates.
    mutating func arguments(datasetID: Int64, createdBy insert: FoldChange) -> BulkArguments {
        bulk.removeAll()
        bulk.append(datasetID)
        bulk.append(text: insert.table)
        bulk.append(text: insert.key)
        bulk.append(insert.version.clock)
        bulk.append(blob: insert.version.site)
        bulk.appendNull()
        bulk.appendNull()
        if MergedRow.packCellsOfRow(createdBy: insert, into: &cells) {
            bulk.append(blob: cells)
        } else {
            bulk.appendNull()
        }
        return bulk
    }
}

/// The statements a fold runs for every row, the write looked up in the connection's cache once
/// per fold and bound value by value: building a statement's SQL text by interpolation, finding
/// it in the cache by that text and boxing its arguments cost about as much as SQLite's work.
private struct FoldStatements {
    static let selectRow = """
        SELECT createdClock, createdSite, deletedClock, deletedSite, cells FROM state_rows
        WHERE datasetID = ? AND tableName = ? AND key = ?
        """

    let upsertRow: Statement
    let insertNewRow: Statement

    init(_ db: Database) throws {
        insertNewRow = try db.cachedStatement(
            """
            INSERT INTO state_rows (datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key) DO NOTHING
            """)
        upsertRow = try db.cachedStatement(
            """
            INSERT INTO state_rows (datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key) DO UPDATE SET
                createdClock = excluded.createdClock, createdSite = excluded.createdSite,
                deletedClock = excluded.deletedClock, deletedSite = excluded.deletedSite, cells = excluded.cells
            """)
    }
}
