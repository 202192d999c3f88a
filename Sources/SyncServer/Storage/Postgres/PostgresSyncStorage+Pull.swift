import Foundation
import SyncProtocol

extension PostgresSyncStorage {
    public func readLog(dataset: String, after serial: Int64, excluding site: SiteID?, limit: Int) throws(ServerError)
        -> LogPage
    {
        try serverWork("reading the log of dataset \(dataset)") { connection in
            // One statement, one snapshot: the newest serial it sees bounds what the page has
            // covered, and serials below it are all committed (docs/POSTGRES.md).
            let result = try connection.execute(
                Statements.readLog,
                [.text(dataset), .int8(serial), site.map { .bytea($0.bytes) } ?? .null, .int8(Int64(limit))])
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
                    entries.append(
                        try result.textBytes(row: row, column: 2), site: try result.byteaBytes(row: row, column: 5))
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
                    changes += try SnapshotChanges.of(
                        table: key.table, keyText: key.key,
                        row: MergeRule.Row(
                            created: try RowMerge.version(rows, row: row, clockAt: 2),
                            deleted: try RowMerge.version(rows, row: row, clockAt: 4)),
                        cells: (cellsByRow[key] ?? []).lazy.map { (name: $0.0, value: $0.1, version: $0.2) })
                    position.table = key.table
                    position.key = key.key
                    position.rowsDone += 1
                }
                position.rowsTotal = max(position.rowsTotal, position.rowsDone)
                return SnapshotPage(changes: changes, position: position, isLast: rows.rowCount < limit)
            }
        }
    }
}
