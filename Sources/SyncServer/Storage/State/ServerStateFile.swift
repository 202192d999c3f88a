import Foundation
import OfflineStoreSQLite

/// `state.sqlite`, beside `server.sqlite`: the merged current state of every dataset
/// (`state_rows`), which ``StateFolder`` folds from the log and first downloads read.
///
/// A file of its own, with its own WAL and its own write lock, so that a fold's transaction runs
/// beside the pushes' group commits: in `server.sqlite` a fold of tens of thousands of changes would
/// hold that file's only writer for a fraction of a second while every push of the time waited.
///
/// The state is derived from the log, so:
/// - its commits do not wait for an fsync (`synchronous = NORMAL`): a fold lost with the power
///   loses its `foldedSerial` with it, and is folded again from the log;
/// - a backup needs only `server.sqlite`;
/// - when the server starts, ``reconcile(with:)`` folds again from the start of its log each
///   dataset whose state was not folded from the log `server.sqlite` now holds (this file was
///   removed, or `server.sqlite` was put back from a copy).
///
/// ```swift
/// let state = try ServerStateFile(directory: dataDirectory)
/// let folded = try state.reconcile(with: logPool)  // datasetID → foldedSerial
/// ```
///
/// See <https://www.sqlite.org/wal.html#concurrency> and
/// <https://www.sqlite.org/pragma.html#pragma_synchronous>.
final class ServerStateFile: Sendable {
    static let fileName = "state.sqlite"

    let pool: DatabasePool
    var path: String { pool.path }

    init(directory: URL) throws {
        var configuration = Configuration()
        configuration.synchronous = .normal
        pool = try DatabasePool.migrated(
            path: directory.appendingPathComponent(Self.fileName).path, plan: ServerStatePlan.self,
            configuration: configuration,
            writerSettings: [
                // A fold touches pages all over the state's B-tree (keys are random UUIDs); 32 MiB
                // keeps those of about a million rows in memory. Readers (first downloads) read in
                // key order and keep the default.
                "PRAGMA cache_size = -32768",
                "PRAGMA wal_autocheckpoint = \(BackgroundCheckpointer.writerAutoCheckpointPages)",
            ])
    }

    /// Makes every dataset's state one folded from the log that `log` (`server.sqlite`) holds, and
    /// returns each dataset's `foldedSerial` (datasets with none fold from 0):
    /// - a dataset's state is kept when its ``mark(ofSerial:datasetID:_:)`` is the log entry's at
    ///   its `foldedSerial`;
    /// - otherwise it is replaced by what `server.sqlite` holds of it from a release before this
    ///   file (`server_rows`, folded through `server_datasets.foldedSerial`); once that was moved
    ///   here it is nothing at serial 0, and the dataset is folded again from the start of its log;
    /// - records of datasets `server.sqlite` does not have are removed.
    ///
    /// What a release before this file left in `server.sqlite` is emptied only after this file has
    /// committed it: a crash in between finds it here on the next start and only empties it.
    func reconcile(with log: DatabasePool) throws -> [Int64: Int64] {
        let datasets = try log.read { db in
            try db.fetchAll("SELECT id, foldedSerial FROM server_datasets ORDER BY id").map { row in
                (id: try row.decode(Int64.self, at: 0), legacySerial: try row.decode(Int64.self, at: 1))
            }
        }
        // One write transaction: a fold or a reconcile of another process opening the same
        // directory (a second server, an administration command) cannot come between a check and
        // its repair.
        let folded = try pool.write { db in
            var recorded: [Int64: (serial: Int64, mark: Int64?)] = [:]
            for row in try db.fetchAll("SELECT datasetID, foldedSerial, foldedMark FROM state_datasets") {
                recorded[try row.decode(at: 0)] = (try row.decode(at: 1), try row.decode(at: 2))
            }
            var folded: [Int64: Int64] = [:]
            for dataset in datasets {
                if let record = recorded[dataset.id], record.serial == 0 || record.mark != nil,
                    try log.read({ logDB in try Self.mark(ofSerial: record.serial, datasetID: dataset.id, logDB) })
                        == record.mark
                {
                    folded[dataset.id] = record.serial
                } else {
                    try Self.adopt(datasetID: dataset.id, foldedThrough: dataset.legacySerial, from: log, db)
                    folded[dataset.id] = dataset.legacySerial
                }
            }
            for id in Set(recorded.keys).subtracting(datasets.map(\.id)) {
                try db.execute("DELETE FROM state_rows WHERE datasetID = \(id)")
                try db.execute("DELETE FROM state_datasets WHERE datasetID = \(id)")
                try StateScopeIndex.forget(datasetID: id, db)
            }
            return folded
        }
        let legacyLeft = try log.read { db in
            try db.fetchOne("SELECT 1 FROM server_rows LIMIT 1") != nil
                || db.fetchOne("SELECT 1 FROM server_datasets WHERE foldedSerial <> 0") != nil
        }
        if legacyLeft {
            try log.write { db in
                try db.execute("DELETE FROM server_rows")
                try db.execute("UPDATE server_datasets SET foldedSerial = 0 WHERE foldedSerial <> 0")
            }
        }
        return folded
    }

    /// Replaces dataset `datasetID`'s state by the rows `server.sqlite` holds of it in
    /// `server_rows`, folded through `serial`.
    private static func adopt(datasetID: Int64, foldedThrough serial: Int64, from log: DatabasePool, _ db: Database)
        throws
    {
        try db.execute("DELETE FROM state_rows WHERE datasetID = \(datasetID)")
        try StateScopeIndex.forget(datasetID: datasetID, db)
        let insert = try db.cachedStatement(FoldStatements.insertSQL(rows: 1))
        let foldedMark = try log.read { legacy in
            let rows = try legacy.fetchCursor(
                """
                SELECT tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells FROM server_rows
                WHERE datasetID = \(datasetID)
                """)
            while let row = try rows.next() {
                try insert.execute(
                    datasetID, try row.decode(String.self, at: 0), try row.decode(String.self, at: 1),
                    try row.decode(DatabaseValue.self, at: 2), try row.decode(DatabaseValue.self, at: 3),
                    try row.decode(DatabaseValue.self, at: 4), try row.decode(DatabaseValue.self, at: 5),
                    try row.decode(DatabaseValue.self, at: 6))
            }
            return try mark(ofSerial: serial, datasetID: datasetID, legacy)
        }
        try record(datasetID: datasetID, foldedSerial: serial, mark: foldedMark, db)
    }

    /// What identifies dataset `datasetID`'s log through `serial`: the entry's ``LogChain``
    /// fingerprint continued by its own body, so that entries stored before fingerprints (NULL)
    /// are still told apart by their content. Nil at serial 0 and for a serial the log lacks.
    static func mark(ofSerial serial: Int64, datasetID: Int64, _ log: Database) throws -> Int64? {
        guard serial > 0,
            let entry = try log.fetchOne(
                "SELECT chain, body FROM server_log WHERE datasetID = \(datasetID) AND serial = \(serial)")
        else { return nil }
        return LogChain.next(after: try entry.decode(Int64?.self, at: 0), body: try entry.decode(String.self, at: 1))
    }

    /// Records that dataset `datasetID`'s state holds its log through `foldedSerial`.
    static func record(datasetID: Int64, foldedSerial: Int64, mark: Int64?, _ db: Database) throws {
        try db.execute(
            """
            INSERT INTO state_datasets (datasetID, foldedSerial, foldedMark) VALUES (\(datasetID), \(foldedSerial), \(mark))
            ON CONFLICT (datasetID) DO UPDATE SET foldedSerial = excluded.foldedSerial, foldedMark = excluded.foldedMark
            """)
    }
}
