import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

@Suite("Reference server: restored from a backup")
struct RestoreTests {
    // Regression: a restored server answered the cursors devices held from before the restore,
    // skipping the changes it numbered again, and no device could learn which of its acknowledged
    // pushes the server had lost.
    @Test(arguments: StorageBackend.allCases)
    func ostoreServerRestoreRefusesEarlierCursorsAndEachHelloSaysWhatTheServerStillHas(_ backend: StorageBackend)
        throws
    {
        let directory = try TemporaryDirectory()
        let data = URL(fileURLWithPath: directory.path("data"))
        let server = try LiveServer(dataDirectory: data, backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        #expect(try alice.hello().acknowledgedThrough == 0)
        _ = try alice.push((1...3).map { alice.change(.insert, "n\($0)", ["title": .text("t")], seq: Int64($0)) })
        #expect(try alice.hello().acknowledgedThrough == 3)
        let beforeBackup = try bob.pullAll().cursor

        let backup = directory.path("backup")
        try server.backUp(to: backup)
        _ = try alice.push((4...6).map { alice.change(.insert, "n\($0)", ["title": .text("t")], seq: Int64($0)) })
        let afterBackup = try bob.pullAll(from: beforeBackup).cursor
        #expect(server.stop() == 0)

        let serverTool = try builtProduct("ostore-server").path
        let notADatabase = directory.path("notes.txt")
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: notADatabase))
        let refused = try run(serverTool, ["restore", notADatabase] + server.storageArguments)
        #expect(refused.status == 2)
        // A data directory is left as it was; PostgreSQL's dump is pg_restore's to put back.
        let refusal = backend == .sqlite ? "nothing was replaced" : "restore the dump with pg_restore first"
        #expect(String(decoding: refused.error, as: UTF8.self).contains(refusal))
        let restore = try #require(try server.restore(from: backup))
        #expect(restore.status == 0, "\(String(decoding: restore.error, as: UTF8.self))")
        #expect(String(decoding: restore.output, as: UTF8.self).contains("1 dataset(s) have a new incarnation"))
        try server.startAgainOnSamePort()

        #expect(try alice.hello().acknowledgedThrough == 3)
        for cursor in [beforeBackup, afterBackup] {
            let body = try ProtocolJSON.encode(
                PullRequest(protocolVersion: 1, schemaVersion: bob.schema.version, site: bob.site, cursor: cursor))
            let answer = try server.request("POST", "/v1/datasets/family/pull", token: token, json: body)
            #expect(answer.status == 400)
            #expect(try JSONDecoder().decode(ErrorBody.self, from: answer.body).error.code == .invalidCursor)
        }
        // Downloading again works, and what the backup lacks can be pushed again.
        #expect(try bob.pullAll().changes.count == 3)
        #expect(
            try alice.push((4...6).map { alice.change(.insert, "n\($0)", [:], seq: Int64($0)) })
                .acknowledgedThrough == 6)
    }

    @Test(arguments: StorageBackend.allCases)
    func cursorsOfADatasetWithoutIncarnationStayValidUntilARestore(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let storage: any SyncStorage
        // A dataset made by the release before incarnations.
        let forgetIncarnations: () throws -> Void
        let renewIncarnations: () throws -> Void
        switch backend {
        case .sqlite:
            let sqlite = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
            storage = sqlite
            forgetIncarnations = {
                let update = try run(
                    "/usr/bin/sqlite3", [sqlite.path, "UPDATE server_datasets SET incarnation = NULL"])
                #expect(update.status == 0)
            }
            renewIncarnations = { try sqlite.renewIncarnations() }
        case .postgres:
            let url = try PostgresCluster.shared().createDatabase()
            let postgres = try PostgresSyncStorage(url: url, connections: 1)
            storage = postgres
            forgetIncarnations = {
                try PostgresCluster.shared().execute("UPDATE server_datasets SET incarnation = NULL", in: url)
            }
            renewIncarnations = { try postgres.renewIncarnations() }
        }
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let service = SyncService(storage: storage)
        try forgetIncarnations()
        // A cursor issued while the dataset has no incarnation (the empty dataset's snapshot ends at
        // the log's start) carries none.
        let old = try JSONDecoder().decode(PullResponse.self, from: try service.pull(family: token, cursor: nil).body)
            .cursor
        #expect(try service.cursorKeys.open(old, dataset: "family").incarnation == nil)
        #expect(try service.pull(family: token, cursor: old).status.rawValue == 200)
        // A serial past the log's end is one the server will give to other changes (signed in-process
        // as a server would issue it before losing them, for the check behind the signature).
        let ahead = try service.cursorKeys.seal(PullCursor.log(7, dataset: "family", incarnation: nil, chain: nil))
        #expect(try service.pull(family: token, cursor: ahead).status.rawValue == 400)
        try renewIncarnations()
        #expect(try service.pull(family: token, cursor: old).status.rawValue == 400)
    }
}
