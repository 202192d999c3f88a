import Foundation
import OfflineStoreSQLite
import SyncProtocol
import SyncStoreBridge

extension SQLiteSyncStorage {
    public func storeBatch(
        _ batch: BatchJSON, site: SiteID, clientSchema: SchemaVersion, dataset: String, token: String?
    ) throws -> StoredBatch {
        let changes = batch.changes
        // The log keeps each change's canonical JSON, the folder what it merges.
        let bodies = batch.bodies
        let folds = changes.indices.map { index in FoldChange(changes[index], key: batch.keys[index]) }
        let name = dataset
        let appended = try storageWork("storing a batch in dataset \(dataset)") {
            try commits.write { db in
                guard
                    let dataset = try db.fetchOne(
                        """
                        SELECT id, schemaVersion, lastSerial, lastChain FROM server_datasets
                        WHERE name = \(dataset)
                        """)
                else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID: Int64 = try dataset.decode(at: 0)
                let datasetSchema = (try dataset.decode(String?.self, at: 1)).flatMap(SchemaVersion.init)
                try ErrorBody.requireMaySync(client: clientSchema, dataset: datasetSchema, pushing: true)
                var serial: Int64 = try dataset.decode(at: 2)
                let siteBytes = site.bytes
                // The binding comes with the high-water mark, in the same read: no round trip more.
                let siteRow = try db.fetchOne(Self.siteOfPush(datasetID: datasetID, site: siteBytes))
                let stored = try siteRow.map { try $0.decode(Int64.self, at: 0) } ?? 0
                let binding = try Self.binding(of: site, dataset: name, siteRow)
                let binds = try token.map { token throws(ErrorBody) in try binding.claim(by: token) } ?? false
                var high = stored
                var appended: [Int] = []
                appended.reserveCapacity(changes.count)
                var entries = LogEntries(datasetID: datasetID, site: siteBytes)
                // Each entry's fingerprint is made from the one before it (see ``LogChain``).
                var chain: Int64? = try dataset.decode(at: 3)
                for index in changes.indices where changes[index].seq > high {
                    serial += 1
                    let next = LogChain.next(after: chain, body: bodies[index])
                    try entries.append(serial: serial, body: bodies[index], chain: next, db)
                    chain = next
                    appended.append(index)
                    high = changes[index].seq
                }
                try entries.flush(db)
                if high != stored || binds {
                    try db.execute(Self.upsertSite(datasetID: datasetID, site: siteBytes, high: high, token: token))
                }
                if high != stored {
                    try db.execute(
                        "UPDATE server_datasets SET lastSerial = \(serial), lastChain = \(chain) WHERE id = \(datasetID)"
                    )
                }
                return Appended(high: high, datasetID: datasetID, lastSerial: serial, indices: appended)
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
                datasetID: appended.datasetID, lastSerial: appended.lastSerial)
        }
        return StoredBatch(acknowledgedThrough: appended.high, appended: appended.indices.count)
    }
}

extension SQLiteSyncStorage {
    /// A site's high-water mark, the token it is bound to and whether that token is still valid
    /// (``SiteBinding``); no row for a site never used.
    static func siteOfPush(datasetID: Int64, site: Data) -> SQL {
        """
        SELECT s.highSeq, s.tokenID, t.id IS NOT NULL FROM server_sites AS s
        LEFT JOIN server_tokens AS t ON t.id = s.tokenID AND t.revokedAt IS NULL
        WHERE s.datasetID = \(datasetID) AND s.site = \(site)
        """
    }

    /// The binding of a row of ``siteOfPush(datasetID:site:)`` (nil: the site was never used).
    static func binding(of site: SiteID, dataset: String, _ row: Row?) throws -> SiteBinding {
        SiteBinding(
            site: site, dataset: dataset, token: try row.flatMap { try $0.decode(String?.self, at: 1) },
            tokenIsLive: try row.map { try $0.decode(Bool.self, at: 2) } ?? false)
    }

    /// Writes a site's high-water mark and, unless `token` is nil, the token it is bound to.
    static func upsertSite(datasetID: Int64, site: Data, high: Int64, token: String?) -> SQL {
        """
        INSERT INTO server_sites (datasetID, site, highSeq, tokenID) VALUES (\(datasetID), \(site), \(high), \(token))
        ON CONFLICT (datasetID, site) DO UPDATE SET
            highSeq = excluded.highSeq, tokenID = coalesce(excluded.tokenID, server_sites.tokenID)
        """
    }
}

/// What a push's transaction appended, handed to the folder once it has committed.
private struct Appended: Sendable {
    var high: Int64
    var datasetID: Int64
    var lastSerial: Int64
    /// The indices in the batch of the changes it appended, in serial order up to `lastSerial`.
    var indices: [Int]
}

/// A push's new log entries, inserted ``rowsPerInsert`` by one statement with their values bound
/// in place from one reused buffer (``BulkArguments``), the rest one by one: a statement per entry,
/// each text bound as a copy of its own, costs the writer more, and every push of a group waits
/// for the writer.
private struct LogEntries {
    static let rowsPerInsert = 64
    private static let oneRowSQL =
        "INSERT INTO server_log (datasetID, serial, site, body, chain) VALUES (?, ?, ?, ?, ?)"
    private static let manyRowsSQL =
        "INSERT INTO server_log (datasetID, serial, site, body, chain) VALUES "
        + Array(repeating: "(?, ?, ?, ?, ?)", count: rowsPerInsert).joined(separator: ", ")

    let datasetID: Int64
    let site: Data
    private var kept: [(serial: Int64, body: String, chain: Int64)] = []
    private var arguments = BulkArguments()

    init(datasetID: Int64, site: Data) {
        self.datasetID = datasetID
        self.site = site
        kept.reserveCapacity(Self.rowsPerInsert)
    }

    /// Keeps an entry, and inserts the entries kept once there are ``rowsPerInsert``.
    mutating func append(serial: Int64, body: String, chain: Int64, _ db: Database) throws {
        kept.append((serial, body, chain))
        guard kept.count == Self.rowsPerInsert else { return }
        try insert(kept, by: db.cachedStatement(Self.manyRowsSQL))
        kept.removeAll(keepingCapacity: true)
    }

    /// Inserts the entries kept, one statement each.
    mutating func flush(_ db: Database) throws {
        guard !kept.isEmpty else { return }
        let statement = try db.cachedStatement(Self.oneRowSQL)
        for entry in kept { try insert(CollectionOfOne(entry), by: statement) }
        kept.removeAll(keepingCapacity: true)
    }

    private mutating func insert(
        _ entries: some Collection<(serial: Int64, body: String, chain: Int64)>, by statement: Statement
    ) throws {
        arguments.removeAll()
        for entry in entries {
            arguments.append(datasetID)
            arguments.append(entry.serial)
            arguments.append(blob: site)
            arguments.append(text: entry.body)
            arguments.append(entry.chain)
        }
        try statement.execute(arguments)
    }
}
