import Foundation
import SyncProtocol

extension PostgresSyncStorage {
    public func readLog(dataset: String, after serial: Int64, excluding site: SiteID, limit: Int) throws(ServerError)
        -> LogPage
    {
        try serverWork("reading the log of dataset \(dataset)") { connection in
            // One statement, one snapshot: the newest serial it sees bounds what the page has
            // covered, and serials below it are all committed (docs/POSTGRES.md).
            let result = try connection.execute(
                Statements.readLog, [.text(dataset), .int8(serial), .bytea(site.bytes), .int8(Int64(limit))])
            guard result.rowCount > 0 else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
            let lastSerial = try result.int64(row: 0, column: 0)
            var entries = LogPage.Entries()
            var last = serial
            var lastChain: Int64?
            // The bytes are the result's own: it must live until each is copied into the page.
            try withExtendedLifetime(result) { () throws(PostgresError) in
                for row in 0..<result.rowCount where !result.isNull(row: row, column: 1) {
                    last = try result.int64(row: row, column: 1)
                    lastChain = try result.optionalInt64(row: row, column: 4)
                    entries.append(try result.textBytes(row: row, column: 2))
                }
            }
            return LogPage(
                entries: entries, lastEntrySerial: last, lastEntryChain: lastChain, after: serial, limit: limit,
                lastSerial: lastSerial, lastChain: try result.optionalInt64(row: 0, column: 3))
        }
    }

    public func readSnapshot(dataset: String, after position: SnapshotPosition?, limit: Int) throws(ServerError)
        -> SnapshotPage
    {
        try serverWork("reading a snapshot of dataset \(dataset)") { connection in
            try connection.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let state = try connection.execute(Statements.snapshotStart, [.text(dataset)])
                guard state.rowCount == 1 else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID = try state.int64(row: 0, column: 0)
                var position =
                    try position
                    ?? SnapshotPosition(
                        startSerial: try state.int64(row: 0, column: 1), table: nil, key: nil, rowsDone: 0,
                        rowsTotal: try state.int64(row: 0, column: 2))
                let rows: PostgresResult
                if let table = position.table, let key = position.key {
                    rows = try connection.execute(
                        Statements.snapshotRowsAfter, [.int8(datasetID), .text(table), .text(key), .int8(Int64(limit))])
                } else {
                    rows = try connection.execute(
                        Statements.snapshotRowsFirst, [.int8(datasetID), .int8(Int64(limit))])
                }
                var cellsByRow: [RowMerge.RowKey: [(String, WireValue, ChangeVersion)]] = [:]
                if rows.rowCount > 0 {
                    let cells = try connection.execute(
                        Statements.snapshotCells,
                        [
                            .int8(datasetID), .text(try rows.string(row: 0, column: 0)),
                            .text(try rows.string(row: 0, column: 1)),
                            .text(try rows.string(row: rows.rowCount - 1, column: 0)),
                            .text(try rows.string(row: rows.rowCount - 1, column: 1)),
                        ])
                    for cell in 0..<cells.rowCount {
                        let key = RowMerge.RowKey(
                            table: try cells.string(row: cell, column: 0), key: try cells.string(row: cell, column: 1))
                        cellsByRow[key, default: []].append(
                            (
                                try cells.string(row: cell, column: 2),
                                try PostgresCellValue.wireValue(cells, row: cell, column: 3),
                                ChangeVersion(
                                    clock: try cells.int64(row: cell, column: 7),
                                    site: try cells.data(row: cell, column: 8))
                            ))
                    }
                }
                var changes: [Change] = []
                for row in 0..<rows.rowCount {
                    let key = RowMerge.RowKey(
                        table: try rows.string(row: row, column: 0), key: try rows.string(row: row, column: 1))
                    changes += try snapshotChanges(
                        key: key, created: try RowMerge.version(rows, row: row, clockAt: 2),
                        deleted: try RowMerge.version(rows, row: row, clockAt: 4), cells: cellsByRow[key] ?? [])
                    position.table = key.table
                    position.key = key.key
                    position.rowsDone += 1
                }
                position.rowsTotal = max(position.rowsTotal, position.rowsDone)
                return SnapshotPage(changes: changes, position: position, isLast: rows.rowCount < limit)
            }
        }
    }

    /// A row as changes, as `SQLiteSyncStorage.snapshotChanges` gives it: a live row is an insert
    /// of every column stamped with the row's creation version, then an update for each column
    /// written later; a deleted row is its tombstone; a row known only from updates is those.
    private func snapshotChanges(
        key: RowMerge.RowKey, created: ChangeVersion?, deleted: ChangeVersion?,
        cells: [(String, WireValue, ChangeVersion)]
    ) throws -> [Change] {
        let keyValues = try ProtocolJSON.decodeValues(Data(key.key.utf8))
        func stamp(_ version: ChangeVersion) -> (ChangeClock, SiteID)? {
            guard let clock = ChangeClock(packed: version.clock), let site = SiteID(bytes: version.site) else {
                return nil
            }
            return (clock, site)
        }
        let createdStamp = created.flatMap(stamp)
        if let deleted, let deletedStamp = stamp(deleted), created.map({ deleted > $0 }) ?? true {
            return [
                Change(
                    table: key.table, key: keyValues, op: .delete, clock: deletedStamp.0, site: deletedStamp.1, seq: 0)
            ]
        }
        var values: [String: WireValue] = [:]
        var later: [Change] = []
        for (name, value, version) in cells {
            values[name] = value
            guard let (clock, site) = stamp(version) else { continue }
            if createdStamp.map({ $0.0 != clock || $0.1 != site }) ?? true {
                later.append(
                    Change(
                        table: key.table, key: keyValues, op: .update, columns: [name: value], clock: clock, site: site,
                        seq: 0))
            }
        }
        guard let createdStamp else { return later }
        var columns = values
        for (name, value) in keyValues { columns[name] = value }
        return [
            Change(
                table: key.table, key: keyValues, op: .insert, columns: columns, clock: createdStamp.0,
                site: createdStamp.1, seq: 0)
        ] + later
    }
}
