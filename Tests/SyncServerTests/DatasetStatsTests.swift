import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// `ostore-server dataset stats`: the log's changes and bytes, the state's live rows and
/// tombstones, on both backends, with the server running.
@Suite("A dataset's figures")
struct DatasetStatsTests {
    /// The operator's own access to `server`'s storage.
    static func admin(of server: LiveServer) throws -> any SyncStorage {
        switch server.backend {
        case .sqlite: try SQLiteSyncStorage(directory: server.dataDirectory, folds: false)
        case .postgres: try PostgresSyncStorage(url: server.postgresURL!, connections: 2)
        }
    }

    @Test(arguments: StorageBackend.allCases)
    func theLogAndTheStateAreCountedLiveRowsApartFromTombstones(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "notes")
        let peer = TestPeer(server, dataset: "notes", token: token, siteByte: 0x31)
        _ = try peer.hello()
        let changes = [
            peer.change(.insert, "a", ["id": .text("a"), "title": .text("one")], seq: 1),
            peer.change(.insert, "b", ["id": .text("b"), "title": .text("two")], seq: 2),
            peer.change(.insert, "c", ["id": .text("c")], seq: 3),
            peer.change(.delete, "b", seq: 4),
            peer.change(.update, "a", ["title": .text("uno")], seq: 5),
            // A delete of a row never inserted leaves a tombstone too.
            peer.change(.delete, "z", seq: 6),
        ]
        _ = try peer.push(changes)
        let admin = try Self.admin(of: server)
        var stats = try admin.datasetStats("notes")
        #expect(
            eventually {
                stats = (try? admin.datasetStats("notes")) ?? stats
                return stats.foldedSerial == 6
            })
        #expect(stats.logEntries == 6 && stats.lastSerial == 6 && stats.horizonSerial == nil)
        #expect(stats.liveRows == 2 && stats.tombstones == 2)
        // Each body is a change's canonical JSON, its site and clock included.
        #expect(stats.logBytes > 6 * 60)

        let location = server.postgresURL.map { ["--postgres", $0] } ?? ["--data", server.dataDirectory.path]
        let command = try builtProduct("ostore-server").path
        let text = try run(command, ["dataset", "stats", "--dataset", "notes"] + location)
        #expect(text.status == 0, "\(String(decoding: text.error, as: UTF8.self))")
        let lines = String(decoding: text.output, as: UTF8.self)
        #expect(lines.contains("log:      6 changes, \(stats.logBytes) bytes, newest serial 6\n"))
        #expect(lines.contains("state:    4 rows: 2 live, 2 tombstones; holds the log up to serial 6\n"))
        #expect(lines.contains("every change since the dataset was made is kept"))
        let json = try run(command, ["dataset", "stats", "--dataset", "notes", "--json"] + location)
        #expect(try JSONDecoder().decode(DatasetStats.self, from: json.output) == stats)

        let missing = try run(command, ["dataset", "stats", "--dataset", "nosuch"] + location)
        #expect(
            missing.status == 2 && String(decoding: missing.error, as: UTF8.self).contains("there is no dataset nosuch")
        )
        #expect(throws: ServerError.self) { try admin.datasetStats("nosuch") }
    }
}
