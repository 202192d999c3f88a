import Foundation
import OfflineStoreSQLite
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
        let (lastSerials, rules) = try log.read { db in
            (
                try db.fetchAll("SELECT id, lastSerial FROM server_datasets ORDER BY id").map { row in
                    (id: try row.decode(Int64.self, at: 0), last: try row.decode(Int64.self, at: 1))
                },
                try storedScopeRules(db)
            )
        }
        return try state.write { db in
            var foldedSerials: [Int64: Int64] = [:]
            for row in try db.fetchAll("SELECT datasetID, foldedSerial FROM state_datasets") {
                foldedSerials[try row.decode(at: 0)] = try row.decode(Int64.self, at: 1)
            }
            // Rules set since the last fold are in the index before the changes after them.
            for (datasetID, stored) in rules
            where try StateScopeIndex.appliedVersion(datasetID: datasetID, db) != stored.version {
                try StateScopeIndex.relink(
                    datasetID: datasetID, rules: stored,
                    at: try ScopePosition.rules(after: try StateScopeIndexReader(db, datasetID: datasetID).end()), db)
            }
            let lagging = lastSerials.compactMap { dataset in
                let from = foldedSerials[dataset.id] ?? 0
                return from < dataset.last ? (id: dataset.id, from: from, last: dataset.last) : nil
            }
            return try fold(&handed, lagging: lagging, limit: limit, log: log, rules: rules, db)
        }
    }

    /// Every dataset's scope rules, by dataset id: those ``setScopeRules(_:definition:dataset:)``
    /// stored last.
    static func storedScopeRules(_ db: Database) throws -> [Int64: StoredScopeRules] {
        var rules: [Int64: StoredScopeRules] = [:]
        for row in try db.fetchAll("SELECT datasetID, version, rules, definition FROM server_scope_rules") {
            rules[try row.decode(at: 0)] = try StoredScopeRules.compiled(
                version: try row.decode(at: 1), rulesText: try row.decode(at: 2), definitionText: try row.decode(at: 3))
        }
        return rules
    }

    private static func fold(
        _ handed: inout StateFolder.Pending, lagging: [(id: Int64, from: Int64, last: Int64)], limit: Int,
        log: DatabasePool, rules: [Int64: StoredScopeRules], _ db: Database
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
        var newRows = NewRows()
        var scopeWrites = try StateScopeIndexWrites(db)
        try work.forEachRow { datasetID, changes, serials in
            if let rules = rules[datasetID] {
                // Read once, before the row is written: the index follows it from its state before
                // the fold, and the row is merged into it.
                let stored = try storedRow(
                    datasetID: datasetID, table: changes[0].table, key: changes[0].key, statements.selectRow)
                try StateScopeIndex.fold(
                    changes, serials: serials, datasetID: datasetID, rules: rules.evaluator, stored: stored,
                    writes: &scopeWrites, db)
                if stored == nil, changes[0].op == .insert {
                    try newRows.add(changes, datasetID: datasetID, statements, db)
                } else {
                    try merge(changes, into: stored, datasetID: datasetID, statements)
                }
            } else if changes[0].op == .insert {
                try newRows.add(changes, datasetID: datasetID, statements, db)
            } else {
                try mergeIntoStoredRow(changes, datasetID: datasetID, statements, db)
            }
        }
        try newRows.insertTheRest(statements, db)
        try scopeWrites.flush()
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
    /// `inMemory` (sorted) holds, decoded from their JSON ``bodiesPerDecode`` at a time.
    private static func readBack(
        datasetID: Int64, after from: Int64, through upTo: Int64, skipping inMemory: [ClosedRange<Int64>],
        into work: inout FoldWork, _ db: Database
    ) throws {
        let cursor = try db.fetchCursor(
            """
            SELECT serial, body FROM server_log
            WHERE datasetID = \(datasetID) AND serial > \(from) AND serial <= \(upTo) ORDER BY serial
            """)
        var skipped = inMemory.startIndex
        var serials: [Int64] = []
        var bodies = LogPage.Entries()
        // Consecutive serials read back go in as one run.
        var run = StateFolder.Run(firstSerial: 0, changes: [])
        func decodeRead() throws {
            for (serial, change) in zip(serials, try bodies.decodedChanges()) {
                if serial != run.endSerial {
                    if !run.changes.isEmpty {
                        work.add(run.changes, firstSerial: run.firstSerial, datasetID: datasetID)
                    }
                    run = StateFolder.Run(firstSerial: serial, changes: [])
                }
                run.changes.append(FoldChange(change, key: try change.canonicalKeyJSON()))
            }
            serials.removeAll(keepingCapacity: true)
            bodies = LogPage.Entries()
        }
        while let row = try cursor.next() {
            let serial: Int64 = try row.decode(at: 0)
            while skipped < inMemory.endIndex, inMemory[skipped].upperBound < serial { skipped += 1 }
            if skipped < inMemory.endIndex, inMemory[skipped].contains(serial) { continue }
            serials.append(serial)
            // In place, as a pull page takes them: no string each.
            try row.withUnsafeBytes(at: 1) { bodies.append($0) }
            if bodies.count == bodiesPerDecode { try decodeRead() }
        }
        try decodeRead()
        if !run.changes.isEmpty { work.add(run.changes, firstSerial: run.firstSerial, datasetID: datasetID) }
    }

    static let bodiesPerDecode = 1_000

    /// Folds one row's changes of this fold, in log order, into its record: read once, merged in
    /// memory (``MergedRow/merge(_:)``), written once if anything changed. Rows whose first change
    /// is an insert go through ``NewRows`` first.
    fileprivate static func mergeIntoStoredRow(
        _ changes: [FoldChange], datasetID: Int64, _ statements: FoldStatements, _ db: Database
    ) throws {
        guard let first = changes.first else { return }
        try merge(
            changes,
            into: try storedRow(datasetID: datasetID, table: first.table, key: first.key, statements.selectRow),
            datasetID: datasetID, statements)
    }

    /// Folds one row's changes into `stored`, the state's record of the row read before (nil when
    /// it had none), and writes the record if anything changed.
    fileprivate static func merge(
        _ changes: [FoldChange], into stored: MergedRow?, datasetID: Int64, _ statements: FoldStatements
    ) throws {
        guard let first = changes.first else { return }
        var merged = stored ?? MergedRow()
        for change in changes { merged.merge(change) }
        // A row new to the state is written whatever its changes did, as each one's merge wrote it.
        guard merged != stored else { return }
        try statements.upsertRow.execute(
            datasetID, first.table, first.key, merged.created?.clock, merged.created?.site, merged.deleted?.clock,
            merged.deleted?.site, merged.packedCells)
    }

    /// The state's record of one row (`key` its key's canonical JSON); nil when it has none.
    static func storedRow(datasetID: Int64, table: String, key: String, _ db: Database) throws -> MergedRow? {
        try db.fetchOne(
            SQL(sql: FoldStatements.selectRow, arguments: [.integer(datasetID), .text(table), .text(key)])
        ).map { row in
            try MergedRow(
                created: try version(row, clockAt: 0), deleted: try version(row, clockAt: 2),
                packedCells: try row.decode(Data?.self, at: 4))
        }
    }

    /// ``storedRow(datasetID:table:key:_:)`` by a statement of ``FoldStatements/selectRow`` the
    /// caller holds.
    static func storedRow(datasetID: Int64, table: String, key: String, _ select: Statement) throws -> MergedRow? {
        try select.withFirstRow(binding: [.integer(datasetID), .text(table), .text(key)]) { row in
            try row.map { row in
                try MergedRow(
                    created: try version(row, clockAt: 0), deleted: try version(row, clockAt: 2),
                    packedCells: try row.decode(Data?.self, at: 4))
            }
        }
    }

    static func version(_ row: Row, clockAt index: Int) throws -> ChangeVersion? {
        guard let clock = try row.decode(Int64?.self, at: index), let site = try row.decode(Data?.self, at: index + 1)
        else { return nil }
        return ChangeVersion(clock: clock, site: site)
    }
}

/// The rows of a fold whose first change is an insert: most likely new to the state, so each one's
/// merge from nothing is inserted without reading first (`ON CONFLICT DO NOTHING`), ``rowsPerInsert``
/// by one statement bound in place from one reused buffer (``BulkArguments``), the rest one by one.
/// When a statement inserts fewer rows than it holds, some were in the state already (brought back
/// after a delete, an older insert arriving late), and each of its rows is read and merged
/// (``SQLiteSyncStorage/mergeIntoStoredRow(_:datasetID:_:_:)``): merging changes into the record
/// they made changes nothing, so the rows it did insert are left as they are. A row whose only
/// change is its insert, the usual one, has its cells packed straight from the change.
///
/// Rows are inserted ``rowsPerInsert`` by one statement: a statement per row costs SQLite more.
private struct NewRows {
    static let rowsPerInsert = 64

    private var rows: [(datasetID: Int64, changes: [FoldChange])] = []
    private var arguments = BulkArguments()
    private var cells: [UInt8] = []

    init() {
        rows.reserveCapacity(Self.rowsPerInsert)
    }

    /// Keeps a row, and inserts the rows kept once there are ``rowsPerInsert``.
    mutating func add(_ changes: [FoldChange], datasetID: Int64, _ statements: FoldStatements, _ db: Database)
        throws
    {
        rows.append((datasetID, changes))
        appendArguments(of: changes, datasetID: datasetID)
        guard rows.count == Self.rowsPerInsert else { return }
        try statements.insertNewRows.execute(arguments)
        if db.changesCount < rows.count {
            for row in rows {
                try SQLiteSyncStorage.mergeIntoStoredRow(row.changes, datasetID: row.datasetID, statements, db)
            }
        }
        rows.removeAll(keepingCapacity: true)
        arguments.removeAll()
    }

    /// Inserts the rows kept, one statement each.
    mutating func insertTheRest(_ statements: FoldStatements, _ db: Database) throws {
        for row in rows {
            arguments.removeAll()
            appendArguments(of: row.changes, datasetID: row.datasetID)
            try statements.insertNewRow.execute(arguments)
            if db.changesCount == 0 {
                try SQLiteSyncStorage.mergeIntoStoredRow(row.changes, datasetID: row.datasetID, statements, db)
            }
        }
        rows.removeAll(keepingCapacity: true)
        arguments.removeAll()
    }

    /// The insert's arguments for the row `changes` make from nothing
    /// (`datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells`).
    private mutating func appendArguments(of changes: [FoldChange], datasetID: Int64) {
        let first = changes[0]
        arguments.append(datasetID)
        arguments.append(text: first.table)
        arguments.append(text: first.key)
        guard changes.count > 1 else {
            arguments.append(first.version.clock)
            arguments.append(blob: first.version.site)
            arguments.appendNull()
            arguments.appendNull()
            if MergedRow.packCellsOfRow(createdBy: first, into: &cells) {
                arguments.append(blob: cells)
            } else {
                arguments.appendNull()
            }
            return
        }
        var merged = MergedRow()
        for change in changes { merged.merge(change) }
        for version in [merged.created, merged.deleted] {
            if let version {
                arguments.append(version.clock)
                arguments.append(blob: version.site)
            } else {
                arguments.appendNull()
                arguments.appendNull()
            }
        }
        if let packed = merged.packedCells { arguments.append(blob: packed) } else { arguments.appendNull() }
    }
}

/// The statements a fold runs for every row, the write looked up in the connection's cache once
/// per fold and bound value by value: building a statement's SQL text by interpolation, finding
/// it in the cache by that text and boxing its arguments cost about as much as SQLite's work.
struct FoldStatements {
    static let selectRow = """
        SELECT createdClock, createdSite, deletedClock, deletedSite, cells FROM state_rows
        WHERE datasetID = ? AND tableName = ? AND key = ?
        """

    /// `rows` rows of `state_rows`, all its columns bound in order, and what a row of the state's
    /// key does.
    static func insertSQL(rows: Int, onConflict: String = "DO NOTHING") -> String {
        """
        INSERT INTO state_rows (datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells)
        VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: rows).joined(separator: ", "))
        ON CONFLICT (datasetID, tableName, key) \(onConflict)
        """
    }

    let selectRow: Statement
    let upsertRow: Statement
    let insertNewRow: Statement
    /// ``NewRows/rowsPerInsert`` rows.
    let insertNewRows: Statement

    private static let insertNewRowSQL = insertSQL(rows: 1)
    private static let insertNewRowsSQL = insertSQL(rows: NewRows.rowsPerInsert)
    private static let upsertRowSQL = insertSQL(
        rows: 1,
        onConflict: """
            DO UPDATE SET
                createdClock = excluded.createdClock, createdSite = excluded.createdSite,
                deletedClock = excluded.deletedClock, deletedSite = excluded.deletedSite, cells = excluded.cells
            """)

    init(_ db: Database) throws {
        selectRow = try db.cachedStatement(Self.selectRow)
        insertNewRow = try db.cachedStatement(Self.insertNewRowSQL)
        insertNewRows = try db.cachedStatement(Self.insertNewRowsSQL)
        upsertRow = try db.cachedStatement(Self.upsertRowSQL)
    }
}
