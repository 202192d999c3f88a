import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

@Suite("Reference server: pull cursors")
struct PullCursorTests {
    // Regression: a snapshot cursor carries the last row's key, and cursors longer than 4,096
    // characters were refused as "not one this server issued", so a dataset with a key of about
    // 3 KB could never be downloaded: every first sync stopped at the page after that row.
    @Test func aSnapshotGoesOnPastRowsWithLongKeys() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let site = SiteID(bytes: Data(repeating: 0xA1, count: 16))!
        let changes = (1...5).map { seq in
            let id = String(repeating: "\(seq)", count: 5_000)
            return Change(
                table: "notes", key: ["id": .text(id)], op: .insert, columns: ["id": .text(id), "title": .text("t")],
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + Int64(seq), counter: 0)!, site: site,
                seq: Int64(seq))
        }
        _ = try storage.storeBatch(changes, site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
        storage.waitUntilFolded()
        let service = SyncService(storage: storage)

        var cursor: String?
        var rows = 0
        var longest = 0
        for _ in 0..<10 {
            let answer = try service.pull(family: token, cursor: cursor, limit: 2)
            #expect(answer.status.rawValue == 200, "\(String(decoding: answer.body.prefix(300), as: UTF8.self))")
            let page = try JSONDecoder().decode(PullResponse.self, from: answer.body)
            rows += page.changes.count
            cursor = page.cursor
            longest = max(longest, page.cursor.utf8.count)
            if page.phase == .log { break }
        }
        #expect(rows == 5)
        // The snapshot's cursors did hold keys that long.
        #expect(longest > 6_000)
    }
}
