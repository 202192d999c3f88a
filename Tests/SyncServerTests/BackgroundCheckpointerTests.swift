import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// The WAL is copied into `server.sqlite` by ``BackgroundCheckpointer``'s thread, not by the
/// pushes' writer, and the storage still holds every change once the thread has done so.
@Suite("Background checkpoint")
struct BackgroundCheckpointerTests {
    @Test func pushesReachTheDatabaseFileWithoutTheWritersCheckpoint() throws {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        let storage = try SQLiteSyncStorage(directory: data)
        try storage.createDataset(named: "family")
        _ = try storage.recordSchema(
            SchemaDescription(version: SchemaVersion(1, 0), fingerprint: "f1", tables: [:]), dataset: "family",
            mayMoveDataset: true)
        let before = try fileSize(storage.path)
        let site = SiteID(bytes: Data(repeating: 7, count: 16))!
        let perBatch = 500
        for batch in 0..<4 {
            let changes = (1...perBatch).map { offset in
                let seq = Int64(batch * perBatch + offset)
                let row = "row-\(seq)"
                return Change(
                    table: "items", key: ["id": .text(row)], op: .insert,
                    columns: ["id": .text(row), "title": .text(String(repeating: "x", count: 200))],
                    clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
            }
            _ = try storage.storeBatch(changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
        }
        let wal = try fileSize(storage.path + "-wal")
        // Far below the writer's own threshold, so only the background thread copies pages.
        #expect(wal < BackgroundCheckpointer.writerAutoCheckpointPages * 4096)
        let deadline = Date().addingTimeInterval(20)
        while try fileSize(storage.path) < before + 500_000 && Date() < deadline { usleep(20_000) }
        #expect(try fileSize(storage.path) >= before + 500_000, "the WAL was not copied into \(storage.path)")
        #expect(try storage.datasets().first?.changes == Int64(4 * perBatch))
        #expect(try storage.readSnapshot(dataset: "family", after: nil, limit: 5_000).changes.count == 4 * perBatch)
    }

    private func fileSize(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }
}
