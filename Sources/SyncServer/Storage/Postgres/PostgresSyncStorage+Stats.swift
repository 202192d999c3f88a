import Foundation
import SyncProtocol

extension PostgresSyncStorage {
    /// Rows of the state read per statement while counting them.
    static let statsPageRows = 10_000

    public func datasetStats(_ dataset: String) throws(ServerError) -> DatasetStats {
        try serverWork("reading the figures of dataset \(dataset)") { connection in
            // One snapshot: the log and the state as one commit left them.
            try connection.transaction(begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
                let datasetID = try self.datasetID(dataset, connection)
                let log = try connection.execute(StatsStatements.log, [.int8(datasetID)])
                let last = try log.int64(row: 0, column: 2)
                var stats = DatasetStats(
                    dataset: dataset, logEntries: try log.int64(row: 0, column: 0),
                    logBytes: try log.int64(row: 0, column: 1), lastSerial: last, foldedSerial: last,
                    horizonSerial: nil, liveRows: 0, tombstones: 0)
                var after = (table: "", key: "")
                while true {
                    let rows = try connection.execute(
                        StatsStatements.rows,
                        [.int8(datasetID), .text(after.table), .text(after.key), .int8(Int64(Self.statsPageRows))])
                    for row in 0..<rows.rowCount {
                        stats.count(
                            MergeRule.Row(
                                created: try RowMerge.version(rows, row: row, clockAt: 2),
                                deleted: try RowMerge.version(rows, row: row, clockAt: 4)))
                    }
                    guard rows.rowCount == Self.statsPageRows else { break }
                    after = (
                        try rows.string(row: rows.rowCount - 1, column: 0),
                        try rows.string(row: rows.rowCount - 1, column: 1)
                    )
                }
                return stats
            }
        }
    }

    enum StatsStatements {
        static let log = PostgresStatement(
            "statsLog",
            """
            SELECT count(*), coalesce(sum(octet_length(body)), 0)::bigint,
                (SELECT last_serial FROM server_datasets WHERE id = $1)
            FROM server_log WHERE dataset_id = $1
            """, [.int8])
        /// In key order from after `($2, $3)`: `('', '')` is before every row.
        static let rows = PostgresStatement(
            "statsRows",
            """
            SELECT table_name, key, created_clock, created_site, deleted_clock, deleted_site FROM server_rows
            WHERE dataset_id = $1 AND (table_name, key) > ($2, $3) ORDER BY table_name, key LIMIT $4
            """, [.int8, .text, .text, .int8])
    }
}
