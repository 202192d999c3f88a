import Foundation
import SyncProtocol

extension PostgresSyncStorage {
    /// One transaction and a fixed number of round trips per batch: lock the dataset's row (which
    /// orders serials, docs/POSTGRES.md), read the site's high-water mark and the current state of
    /// the rows the batch touches, merge in memory by the same rule as ``SQLiteSyncStorage``,
    /// then write the log entries, rows and cells as arrays.
    public func storeBatch(
        _ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String, token: String?
    ) throws -> StoredBatch {
        let changes = batch.changes
        // The log keeps each change's canonical JSON, as the SQLite backend keeps it.
        let (bodies, keys) = (batch.bodies, batch.keys)
        return try storageWork("storing a batch in dataset \(dataset)") { connection in
            try connection.transaction {
                let state = try connection.execute(Statements.lockDataset, [.text(dataset)])
                guard state.rowCount == 1 else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID = try state.int64(row: 0, column: 0)
                let datasetSchema = try state.optionalString(row: 0, column: 1).flatMap(SchemaVersion.init)
                try ErrorBody.requireMaySync(client: clientSchema, dataset: datasetSchema, pushing: true)
                var serial = try state.int64(row: 0, column: 2)
                let siteBytes = site.bytes
                // The binding comes with the high-water mark, in the same round trip.
                let siteRow = try connection.execute(Statements.siteOfPush, [.int8(datasetID), .bytea(siteBytes)])
                let known = siteRow.rowCount == 1
                let stored = known ? try siteRow.int64(row: 0, column: 0) : 0
                let binding = SiteBinding(
                    site: site, dataset: dataset, token: known ? try siteRow.optionalString(row: 0, column: 1) : nil,
                    tokenIsLive: known ? try siteRow.bool(row: 0, column: 2) : false)
                let binds = try token.map { token throws(ErrorBody) in try binding.claim(by: token) } ?? false
                let fresh = changes.indices.filter { changes[$0].seq > stored }
                guard let last = fresh.last else {
                    if binds {
                        try connection.execute(
                            Statements.upsertSite,
                            [.int8(datasetID), .bytea(siteBytes), .int8(stored), .optionalText(token)])
                    }
                    return StoredBatch(acknowledgedThrough: stored, appended: 0)
                }

                var merge = try RowMerge(
                    loading: Set(fresh.map { RowMerge.RowKey(table: changes[$0].table, key: keys[$0]) }),
                    datasetID: datasetID, connection)
                // Each entry's fingerprint is made from the one before it (see ``LogChain``); the
                // locked row's is the newest committed.
                var chain = try state.optionalInt64(row: 0, column: 3)
                var serials: [PostgresValue] = []
                var numbered: [Int64] = []
                var chains: [PostgresValue] = []
                for index in fresh {
                    serial += 1
                    serials.append(.int8(serial))
                    numbered.append(serial)
                    let next = LogChain.next(after: chain, body: bodies[index])
                    chains.append(.int8(next))
                    chain = next
                    merge.apply(changes[index], key: keys[index])
                }
                try connection.execute(
                    Statements.insertLog,
                    [
                        .int8(datasetID), .bytea(siteBytes), .array(.int8, serials),
                        .array(.text, fresh.map { .text(bodies[$0]) }), .array(.int8, chains),
                    ])
                // The index reads the rows as they stood before the batch.
                if let rulesVersion = try state.optionalInt64(row: 0, column: 5) {
                    try indexScopes(
                        of: zip(fresh, numbered).map { (changes[$0], keys[$0], $1) }, datasetID: datasetID,
                        rulesVersion: rulesVersion, connection)
                }
                try merge.write(datasetID: datasetID, connection)
                let high = changes[last].seq
                try connection.execute(
                    Statements.upsertSite, [.int8(datasetID), .bytea(siteBytes), .int8(high), .optionalText(token)])
                try connection.execute(
                    Statements.setLastSerial,
                    [
                        .int8(datasetID), .int8(serial), .optionalInt8(chain),
                        .text(PostgresChangeListener.payload(instance: instance, dataset: dataset)),
                    ])
                return StoredBatch(acknowledgedThrough: high, appended: fresh.count)
            }
        }
    }
}

/// The merged state of the rows one batch touches, loaded before and written after the batch is
/// folded in: the protocol's merge rule, step for step as ``SQLiteSyncStorage`` applies it row by
/// row, so both backends hold the same state after the same pushes.
struct RowMerge {
    struct RowKey: Hashable {
        var table: String
        var key: String
    }

    /// Each row's creation and deletion versions; nil versions are SQL NULLs.
    private var rows: [RowKey: MergeRule.Row] = [:]
    private var cells: [RowKey: [String: ChangeVersion]] = [:]
    private var changedRows: Set<RowKey> = []
    /// Rows whose stored cells a delete dropped (the database's cells go before new ones are written).
    private var clearedRows: Set<RowKey> = []
    private var writtenCells: [RowKey: [String: (WireValue, ChangeVersion)]] = [:]
    /// Stored cells of rows an insert created that the insert's versions void (``MergeRule/Verdict/create``).
    private var droppedCells: [RowKey: Set<String>] = [:]
    /// Stored cells a newer insert of their row dates again (``MergeRule/isDatedByCreation(_:row:)``),
    /// at the row's creation version as written.
    private var redatedCells: [RowKey: [String: ChangeVersion]] = [:]

    init(loading keys: Set<RowKey>, datasetID: Int64, _ connection: PostgresConnection) throws {
        let ordered = Array(keys)
        let parameters: [PostgresValue] = [
            .int8(datasetID), .array(.text, ordered.map { .text($0.table) }),
            .array(.text, ordered.map { .text($0.key) }),
        ]
        let rowResult = try connection.execute(PostgresSyncStorage.Statements.rowStates, parameters)
        for row in 0..<rowResult.rowCount {
            let key = RowKey(
                table: try rowResult.string(row: row, column: 0), key: try rowResult.string(row: row, column: 1))
            rows[key] = MergeRule.Row(
                created: try Self.version(rowResult, row: row, clockAt: 2),
                deleted: try Self.version(rowResult, row: row, clockAt: 4))
        }
        let cellResult = try connection.execute(PostgresSyncStorage.Statements.cellVersions, parameters)
        for row in 0..<cellResult.rowCount {
            let key = RowKey(
                table: try cellResult.string(row: row, column: 0), key: try cellResult.string(row: row, column: 1))
            cells[key, default: [:]][try cellResult.string(row: row, column: 2)] = ChangeVersion(
                clock: try cellResult.int64(row: row, column: 3), site: try cellResult.data(row: row, column: 4))
        }
    }

    static func version(_ result: PostgresResult, row: Int, clockAt column: Int) throws -> ChangeVersion? {
        guard let clock = try result.optionalInt64(row: row, column: column),
            let site = try result.optionalData(row: row, column: column + 1)
        else { return nil }
        return ChangeVersion(clock: clock, site: site)
    }

    /// Folds one change in by the protocol's merge rule (``MergeRule``), as ``MergedRow`` folds it
    /// into a row of the SQLite backend.
    mutating func apply(_ change: Change, key keyText: String) {
        let key = RowKey(table: change.table, key: keyText)
        let incoming = ChangeVersion(change.clock, change.site)
        let row = rows[key] ?? MergeRule.Row(created: nil, deleted: nil)
        let isPresent = row.created != nil && !row.isDeleted

        func setRow(_ state: MergeRule.Row) {
            rows[key] = state
            changedRows.insert(key)
        }
        func writeCell(_ name: String, _ value: WireValue) {
            cells[key, default: [:]][name] = incoming
            writtenCells[key, default: [:]][name] = (value, incoming)
            droppedCells[key]?.remove(name)
            redatedCells[key]?[name] = nil
        }

        let verdict = MergeRule.verdict(of: change.op, at: incoming, row: row, isPresent: isPresent)
        switch verdict {
        case .superseded:
            return
        case .delete:
            setRow(MergeRule.Row(created: row.created, deleted: incoming))
            cells[key] = nil
            writtenCells[key] = nil
            droppedCells[key] = nil
            redatedCells[key] = nil
            clearedRows.insert(key)
            return
        case .create:
            setRow(MergeRule.Row(created: incoming, deleted: row.deleted))
            for (name, version) in cells[key] ?? [:]
            where !MergeRule.waitingColumnStays(version, afterCreationAt: incoming) {
                cells[key]?[name] = nil
                writtenCells[key]?[name] = nil
                droppedCells[key, default: []].insert(name)
                redatedCells[key]?[name] = nil
            }
        case .merge(newCreation: true):
            setRow(MergeRule.Row(created: incoming, deleted: row.deleted))
        case .waitForRow, .merge(newCreation: false):
            if rows[key] == nil { setRow(row) }
        }
        for (name, value) in change.columns where change.key[name] == nil {
            if MergeRule.writesColumn(at: incoming, over: cells[key]?[name], row: row) { writeCell(name, value) }
        }
        guard verdict == .merge(newCreation: true) else { return }
        // The columns the old creation dated and this insert did not write are dated by the new one.
        for (name, version) in cells[key] ?? [:] where MergeRule.isDatedByCreation(version, row: row) {
            cells[key]?[name] = incoming
            if let written = writtenCells[key]?[name] {
                writtenCells[key]?[name] = (written.0, incoming)
            } else {
                redatedCells[key, default: [:]][name] = incoming
            }
        }
    }

    /// Writes the changed rows, drops the cells of deleted rows and writes the cells set since.
    func write(datasetID: Int64, _ connection: PostgresConnection) throws {
        typealias Statements = PostgresSyncStorage.Statements
        if !changedRows.isEmpty {
            let changed = Array(changedRows)
            let states = changed.map { rows[$0]! }
            try connection.execute(
                Statements.upsertRows,
                [
                    .int8(datasetID), .array(.text, changed.map { .text($0.table) }),
                    .array(.text, changed.map { .text($0.key) }),
                    .array(.int8, states.map { .optionalInt8($0.created?.clock) }),
                    .array(.bytea, states.map { .optionalBytea($0.created?.site) }),
                    .array(.int8, states.map { .optionalInt8($0.deleted?.clock) }),
                    .array(.bytea, states.map { .optionalBytea($0.deleted?.site) }),
                ])
        }
        if !clearedRows.isEmpty {
            let cleared = Array(clearedRows)
            try connection.execute(
                Statements.deleteCells,
                [
                    .int8(datasetID), .array(.text, cleared.map { .text($0.table) }),
                    .array(.text, cleared.map { .text($0.key) }),
                ])
        }
        let dropped = droppedCells.flatMap { key, names in names.map { (key, $0) } }
        if !dropped.isEmpty {
            try connection.execute(
                Statements.deleteCellColumns,
                [
                    .int8(datasetID), .array(.text, dropped.map { .text($0.0.table) }),
                    .array(.text, dropped.map { .text($0.0.key) }), .array(.text, dropped.map { .text($0.1) }),
                ])
        }
        let redated = redatedCells.flatMap { key, names in names.map { (key, $0.key, $0.value) } }
        if !redated.isEmpty {
            try connection.execute(
                Statements.redateCells,
                [
                    .int8(datasetID), .array(.text, redated.map { .text($0.0.table) }),
                    .array(.text, redated.map { .text($0.0.key) }), .array(.text, redated.map { .text($0.1) }),
                    .array(.int8, redated.map { .int8($0.2.clock) }), .array(.bytea, redated.map { .bytea($0.2.site) }),
                ])
        }
        let written = writtenCells.flatMap { key, columns in columns.map { (key, $0.key, $0.value.0, $0.value.1) } }
        guard !written.isEmpty else { return }
        let values = written.map { PostgresCellValue($0.2) }
        try connection.execute(
            Statements.upsertCells,
            [
                .int8(datasetID), .array(.text, written.map { .text($0.0.table) }),
                .array(.text, written.map { .text($0.0.key) }), .array(.text, written.map { .text($0.1) }),
                .array(.int2, values.map { .int2($0.type) }), .array(.int8, values.map { .optionalInt8($0.integer) }),
                .array(.float8, values.map { $0.real.map { .float8($0) } ?? .null }),
                .array(.bytea, values.map { .optionalBytea($0.bytes) }),
                .array(.int8, written.map { .int8($0.3.clock) }), .array(.bytea, written.map { .bytea($0.3.site) }),
            ])
    }
}
