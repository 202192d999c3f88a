import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Both storage backends against the table of `Protocol/vectors/merge/` (Protocol §8.2): each
/// change pushed as a batch of its own, in the given order and, where the table says so, in every
/// order (one dataset each), and the row read back from a snapshot as a new client gets it.
@Suite("The merge rule's vectors: the server")
struct MergeVectorServerTests {
    static let key: [String: WireValue] = ["id": .text("r1")]

    private func check(_ storage: any SyncStorage) throws {
        var datasets = 0
        for vector in try MergeVector.all() {
            for order in vector.orders {
                datasets += 1
                let dataset = "merge\(datasets)"
                try storage.createDataset(named: dataset)
                var seqs: [SiteID: Int64] = [:]
                for change in order {
                    var change = change
                    change.seq = (seqs[change.site] ?? 0) + 1
                    seqs[change.site] = change.seq
                    _ = try storage.storeBatch(
                        BatchJSON([change]), site: change.site, clientSchema: SchemaVersion(1, 0), dataset: dataset,
                        token: nil)
                }
                var snapshot: [Change] = []
                var position: SnapshotPosition?
                while true {
                    let page = try storage.readSnapshot(dataset: dataset, after: position, limit: 100)
                    snapshot += page.changes
                    position = page.position
                    if page.isLast { break }
                }
                #expect(
                    MergedRowState(snapshot: snapshot, key: Self.key) == vector.final,
                    "\(vector.name) in the order \(order.map { "\($0.op) \($0.clock)" })")
            }
        }
    }

    @Test func theSQLiteBackendServesEachVectorsRow() throws {
        let directory = try TemporaryDirectory()
        try check(SQLiteSyncStorage(directory: directory.url))
    }

    @Test func thePostgreSQLBackendServesEachVectorsRow() throws {
        try check(PostgresSyncStorage(url: try PostgresCluster.shared().createDatabase(), connections: 2))
    }
}
