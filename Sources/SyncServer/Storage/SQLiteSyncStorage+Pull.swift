import Foundation
import OfflineStoreSQLite
import SyncProtocol
import SyncStoreBridge

extension SQLiteSyncStorage {
    public func readLog(dataset: String, after serial: Int64, excluding site: SiteID?, limit: Int) throws(ServerError)
        -> LogPage
    {
        try serverWork("reading the log of dataset \(dataset)") {
            // One read transaction: the newest serial it sees bounds what the page has covered.
            try pool.read { db in
                guard
                    let state = try db.fetchOne(
                        "SELECT id, lastSerial, lastChain FROM server_datasets WHERE name = \(dataset)")
                else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID: Int64 = try state.decode(at: 0)
                let lastSerial: Int64 = try state.decode(at: 1)
                let cursor = try db.fetchCursor(
                    """
                    SELECT serial, body, chain, site FROM server_log
                    WHERE datasetID = \(datasetID) AND serial > \(serial) AND site IS NOT \(site?.bytes)
                    ORDER BY serial LIMIT \(limit)
                    """)
                var entries = LogPage.Entries()
                var last = serial
                var lastChain: Int64?
                while let row = try cursor.next() {
                    last = try row.decode(at: 0)
                    lastChain = try row.decode(at: 2)
                    // In place: no string each (its UTF-8 check and copy) for bytes passed on as
                    // they are. (A BLOB cast cost SQLite a copy of each body.)
                    try row.withUnsafeBytes(at: 1) { json in
                        try row.withUnsafeBytes(at: 3) { site in entries.append(json, site: site) }
                    }
                }
                return LogPage(
                    entries: entries, lastEntrySerial: last, lastEntryChain: lastChain, after: serial, limit: limit,
                    lastSerial: lastSerial, lastChain: try state.decode(at: 2))
            }
        }
    }

    public func logChain(dataset: String, serial: Int64) throws(ServerError) -> Int64? {
        try serverWork("reading the log of dataset \(dataset)") {
            try pool.read { db in
                try db.fetchValue(
                    Int64.self,
                    """
                    SELECT l.chain FROM server_datasets AS d JOIN server_log AS l ON l.datasetID = d.id
                    WHERE d.name = \(dataset) AND l.serial = \(serial)
                    """)
            }
        }
    }

    public func readSnapshot(dataset: String, after position: SnapshotPosition?, limit: Int) throws(ServerError)
        -> SnapshotPage
    {
        try serverWork("reading a snapshot of dataset \(dataset)") {
            let datasetID = try pool.read { db in try self.datasetID(dataset, db) }
            if position == nil { try waitForTheFold(of: datasetID) }
            return try state.pool.read { db in
                // The state holds the log up to `foldedSerial`, read in this same transaction: the
                // cursor resumes the log there, so state plus the log after it is everything.
                var position =
                    try position
                    ?? SnapshotPosition(
                        startSerial: try db.fetchValue(
                            Int64.self, "SELECT foldedSerial FROM state_datasets WHERE datasetID = \(datasetID)") ?? 0,
                        table: nil, key: nil, rowsDone: 0,
                        rowsTotal: try db.fetchValue(
                            Int64.self, "SELECT count(*) FROM state_rows WHERE datasetID = \(datasetID)") ?? 0)
                let rows: [Row]
                if let table = position.table, let key = position.key {
                    rows = try db.fetchAll(
                        """
                        SELECT tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells FROM state_rows
                        WHERE datasetID = \(datasetID) AND (tableName, key) > (\(table), \(key))
                        ORDER BY tableName, key LIMIT \(limit)
                        """)
                } else {
                    rows = try db.fetchAll(
                        """
                        SELECT tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells FROM state_rows
                        WHERE datasetID = \(datasetID) ORDER BY tableName, key LIMIT \(limit)
                        """)
                }
                var changes: [Change] = []
                for row in rows {
                    let table: String = try row.decode(at: 0)
                    let keyText: String = try row.decode(at: 1)
                    let merged = try MergedRow(
                        created: try Self.version(row, clockAt: 2), deleted: try Self.version(row, clockAt: 4),
                        packedCells: try row.decode(Data?.self, at: 6))
                    changes += try SnapshotChanges.of(table: table, keyText: keyText, row: merged)
                    position.table = table
                    position.key = keyText
                    position.rowsDone += 1
                }
                position.rowsTotal = max(position.rowsTotal, position.rowsDone)
                return SnapshotPage(changes: changes, position: position, isLast: rows.count < limit)
            }
        }
    }

    /// Lets the folder catch up with what the log held when a first pull began (it folds about
    /// as fast as pushes append, and pushes wait past ``StateFolder/maximumLag``, so this is
    /// seconds at most).
    private func waitForTheFold(of datasetID: Int64) throws {
        let last = try pool.read { db in
            try db.fetchValue(Int64.self, "SELECT lastSerial FROM server_datasets WHERE id = \(datasetID)")
        }
        guard let last else { return }
        folder.waitUntilFolded(datasetID: datasetID, through: last, timeout: .seconds(10))
    }
}
