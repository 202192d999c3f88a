import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// Pushes that share a commit (``GroupCommit``) keep every promise a push makes alone: each is
/// stored all or nothing, a refused one takes no other with it, replays store nothing twice, and
/// every acknowledged change is there after the storage is opened again.
@Suite("Group commit")
struct GroupCommitTests {
    @Test func concurrentPushesShareCommitsAndKeepEachPushWhole() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        let sites = (0..<8).map { index in SiteID(bytes: Data(repeating: UInt8(index + 1), count: 16))! }
        let batches = 12
        let perBatch = 25
        let refused = Locked(0)
        let acknowledged = Locked([SiteID: Int64]())
        do {
            let storage = try SQLiteSyncStorage(directory: data)
            try storage.createDataset(named: "family")
            _ = try storage.recordSchema(
                SchemaDescription(version: SchemaVersion(2, 0), fingerprint: "f2", tables: [:]), dataset: "family",
                mayMoveDataset: true)
            DispatchQueue.concurrentPerform(iterations: sites.count) { index in
                let site = sites[index]
                for batch in 0..<batches {
                    let changes = (0..<perBatch).map { offset in
                        change(
                            site: site, seq: Int64(batch * perBatch + offset + 1), row: "\(index)-\(batch)-\(offset)")
                    }
                    // Every third batch of an odd site comes from an app a major version behind:
                    // refused whole, in whatever group it lands.
                    let schema = index % 2 == 1 && batch % 3 == 0 ? SchemaVersion(1, 0) : SchemaVersion(2, 0)
                    for _ in 0..<2 {  // each batch twice: the replay stores nothing and gets the same answer
                        do {
                            let high = try storage.storeBatch(
                                changes, site: site, clientSchema: schema, dataset: "family")
                            acknowledged.withLock { $0[site] = max($0[site] ?? 0, high) }
                        } catch let error as ErrorBody {
                            #expect(error.error.code == .upgradeRequired)
                            refused.withLock { $0 += 1 }
                        } catch {
                            Issue.record("unexpected \(error)")
                        }
                    }
                }
            }
        }
        let refusedBatches = refused.withLock { $0 } / 2
        #expect(refusedBatches == 4 * 4)
        // Opened again: exactly the accepted batches' changes, each once, in one log.
        let storage = try SQLiteSyncStorage(directory: data)
        var seen: [String] = []
        var serial: Int64 = 0
        while true {
            let page = try storage.readLog(
                dataset: "family", after: serial, excluding: SiteID(bytes: Data(count: 16))!, limit: 500)
            seen += page.entries
            serial = page.nextSerial
            if !page.hasMore { break }
        }
        #expect(seen.count == (sites.count * batches - refusedBatches) * perBatch)
        #expect(Set(seen).count == seen.count)
        let snapshot = try storage.readSnapshot(dataset: "family", after: nil, limit: 5_000)
        #expect(snapshot.position.rowsTotal == Int64(seen.count))
        for (index, site) in sites.enumerated() {
            // The last batch is always accepted, so every site is acknowledged through its end.
            #expect(acknowledged.withLock { $0[site] } == Int64(batches * perBatch), "site \(index)")
        }
    }

    private func change(site: SiteID, seq: Int64, row: String) -> Change {
        Change(
            table: "items", key: ["id": .text(row)], op: .insert,
            columns: ["id": .text(row), "title": .text("item \(row)"), "done": .integer(seq % 2)],
            clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
    }
}
