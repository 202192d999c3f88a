import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension SQLiteSyncStorage {
    public func storeBatch(
        _ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String
    ) throws -> Int64 {
        let changes = batch.changes
        // The log keeps each change's canonical JSON, the folder what it merges.
        let bodies = batch.bodies
        let folds = changes.indices.map { index in FoldChange(changes[index], key: batch.keys[index]) }
        let appended = try storageWork("storing a batch in dataset \(dataset)") {
            try commits.write { db in
                guard
                    let dataset = try db.fetchOne(
                        """
                        SELECT id, schemaVersion, lastSerial, foldedSerial, lastChain FROM server_datasets
                        WHERE name = \(dataset)
                        """)
                else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID: Int64 = try dataset.decode(at: 0)
                let datasetSchema = (try dataset.decode(String?.self, at: 1)).flatMap(SchemaVersion.init)
                try ErrorBody.requireMaySync(client: clientSchema, dataset: datasetSchema, pushing: true)
                var serial: Int64 = try dataset.decode(at: 2)
                let siteBytes = site.bytes
                let stored =
                    try db.fetchValue(
                        Int64.self,
                        "SELECT highSeq FROM server_sites WHERE datasetID = \(datasetID) AND site = \(siteBytes)") ?? 0
                var high = stored
                var appended: [Int] = []
                appended.reserveCapacity(changes.count)
                let insertLog = try db.cachedStatement(
                    "INSERT INTO server_log (datasetID, serial, site, body, chain) VALUES (?, ?, ?, ?, ?)")
                // Each entry's fingerprint is made from the one before it (see ``LogChain``).
                var chain: Int64? = try dataset.decode(at: 4)
                for index in changes.indices where changes[index].seq > high {
                    serial += 1
                    let next = LogChain.next(after: chain, body: bodies[index])
                    try insertLog.execute(datasetID, serial, siteBytes, bodies[index], next)
                    chain = next
                    appended.append(index)
                    high = changes[index].seq
                }
                if high != stored {
                    try db.execute(
                        """
                        INSERT INTO server_sites (datasetID, site, highSeq) VALUES (\(datasetID), \(siteBytes), \(high))
                        ON CONFLICT (datasetID, site) DO UPDATE SET highSeq = excluded.highSeq
                        """)
                    try db.execute(
                        "UPDATE server_datasets SET lastSerial = \(serial), lastChain = \(chain) WHERE id = \(datasetID)"
                    )
                }
                return Appended(
                    high: high, datasetID: datasetID, lastSerial: serial, foldedSerial: try dataset.decode(at: 3),
                    indices: appended)
            }
        }
        // Acknowledged without waiting for the merge into the state, unless the fold trails too far.
        if let first = appended.indices.first, let last = appended.indices.last {
            // The changes appended are the batch's from the first new seq on (seqs grow along a
            // batch): a slice of `folds`, not a copy, unless a caller sent them out of order.
            let changes =
                appended.indices.count == last - first + 1
                ? folds[first...last] : ArraySlice(appended.indices.map { folds[$0] })
            folder.handOver(
                StateFolder.Run(firstSerial: appended.lastSerial - Int64(changes.count) + 1, changes: changes),
                datasetID: appended.datasetID, lastSerial: appended.lastSerial,
                foldedSerial: appended.foldedSerial)
        }
        return appended.high
    }
}

/// What a push's transaction appended, handed to the folder once it has committed.
private struct Appended: Sendable {
    var high: Int64
    var datasetID: Int64
    var lastSerial: Int64
    var foldedSerial: Int64
    /// The indices in the batch of the changes it appended, in serial order up to `lastSerial`.
    var indices: [Int]
}
