import OfflineStoreSQLite
import SyncProtocol

extension SQLiteSyncStorage {
    public func datasetStats(_ dataset: String) throws(ServerError) -> DatasetStats {
        try serverWork("reading the figures of dataset \(dataset)") {
            let (datasetID, log) = try pool.read { db in
                let datasetID = try self.datasetID(dataset, db)
                let row = try db.fetchOne(
                    """
                    SELECT count(*), ifnull(sum(length(CAST(body AS BLOB))), 0),
                        (SELECT lastSerial FROM server_datasets WHERE id = \(datasetID))
                    FROM server_log WHERE datasetID = \(datasetID)
                    """)
                return (
                    datasetID,
                    (
                        entries: try row?.decode(Int64.self, at: 0) ?? 0,
                        bytes: try row?.decode(Int64.self, at: 1) ?? 0,
                        last: try row?.decode(Int64.self, at: 2) ?? 0
                    )
                )
            }
            return try state.pool.read { db in
                var stats = DatasetStats(
                    dataset: dataset, logEntries: log.entries, logBytes: log.bytes, lastSerial: log.last,
                    foldedSerial: try db.fetchValue(
                        Int64.self, "SELECT foldedSerial FROM state_datasets WHERE datasetID = \(datasetID)") ?? 0,
                    horizonSerial: nil, liveRows: 0, tombstones: 0)
                let rows = try db.fetchCursor(
                    """
                    SELECT createdClock, createdSite, deletedClock, deletedSite FROM state_rows
                    WHERE datasetID = \(datasetID)
                    """)
                while let row = try rows.next() {
                    stats.count(
                        MergeRule.Row(
                            created: try Self.version(row, clockAt: 0), deleted: try Self.version(row, clockAt: 2)))
                }
                return stats
            }
        }
    }
}
