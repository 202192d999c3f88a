import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// What only the PostgreSQL backend has: several server processes over one database, ordering
/// under concurrent writers, losing the database and getting it back, its own migration ledger.
@Suite("Reference server on PostgreSQL")
struct PostgresBackendTests {
    /// Two servers over one database.
    private func twoServers(_ directory: TemporaryDirectory, cluster: PostgresCluster? = nil) throws -> (
        LiveServer, LiveServer
    ) {
        let url = try (cluster ?? PostgresCluster.shared()).createDatabase()
        let first = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("first")), backend: .postgres, postgresURL: url)
        let second = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("second")), backend: .postgres, postgresURL: url)
        return (first, second)
    }

    @Test func eightPushersThroughTwoServersAndAPullerGetsEveryChangeExactlyOnce() throws {
        let directory = try TemporaryDirectory()
        let (first, second) = try twoServers(directory)
        let token = try makeDataset(first, "busy")
        let servers = [first, second]
        let pushers = (1...8).map { index in
            TestPeer(servers[index % 2], dataset: "busy", token: token, siteByte: UInt8(index))
        }
        let perPusher = 10_000
        let perBatch = 250
        // The puller alternates between the servers: a cursor from one is good on the other.
        let pullers = servers.map { TestPeer($0, dataset: "busy", token: token, siteByte: 0xEE) }
        var cursor = try pullers[0].pullAll().cursor

        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for pusher in pushers {
            DispatchQueue.global().async(group: group) {
                do {
                    for batch in 0..<(perPusher / perBatch) {
                        let changes = (1...perBatch).map { index in
                            let seq = Int64(batch * perBatch + index)
                            return pusher.change(.insert, "\(pusher.site)-\(seq)", ["title": .text("x")], seq: seq)
                        }
                        _ = try pusher.push(changes)
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        var seen: [String: Int] = [:]
        var pulls = 0
        let expected = pushers.count * perPusher
        let deadline = ContinuousClock.now.advanced(by: .seconds(600))
        while seen.count < expected, ContinuousClock.now < deadline, failures.withLock({ $0.isEmpty }) {
            let page = try pullers[pulls % 2].pull(cursor: cursor, limit: 1_000)
            pulls += 1
            for change in page.changes { seen["\(change.site)/\(change.seq)", default: 0] += 1 }
            cursor = page.cursor
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        let rest = try pullers[1].pullAll(from: cursor, limit: 1_000)
        for change in rest.changes { seen["\(change.site)/\(change.seq)", default: 0] += 1 }
        #expect(seen.count == expected)
        #expect(seen.values.allSatisfy { $0 == 1 }, "\(seen.values.filter { $0 > 1 }.count) changes came twice")
        // The puller really ran while the pushes did: many pages, not one drain at the end.
        #expect(pulls > 20)
        #expect(try first.storage().datasets().first?.changes == Int64(expected))
    }

    @Test func twoServersServeTheSameDatasetsAndTheirClientsConverge() throws {
        let directory = try TemporaryDirectory()
        let (first, second) = try twoServers(directory)
        let token = try makeDataset(first, "family")
        // A dataset and token made through one server are known to the other at once.
        let alice = TestPeer(first, dataset: "family", token: token, siteByte: 0xA1)
        let bob = TestPeer(second, dataset: "family", token: token, siteByte: 0xB2)
        #expect(try alice.hello().verdict == .compatible)
        #expect(try bob.hello().verdict == .compatible)
        _ = try alice.push([
            alice.change(
                .insert, "n1", ["title": .text("milk"), "body": .integer(.max)], seq: 1, clock: 1_764_000_000_001),
            alice.change(.insert, "n2", ["title": .text("eggs")], seq: 2, clock: 1_764_000_000_002),
        ])
        _ = try bob.push([
            bob.change(.update, "n1", ["title": .text("oat milk")], seq: 1, clock: 1_764_000_000_005),
            bob.change(.delete, "n2", seq: 2, clock: 1_764_000_000_006),
            bob.change(.insert, "n3", ["title": .text("bread"), "body": .blob(Data([0, 1, 255]))], seq: 3),
        ])
        // A late, older edit of alice's loses to bob's newer one wherever it is merged.
        _ = try alice.push([alice.change(.update, "n1", ["title": .text("soy milk")], seq: 3, clock: 1_764_000_000_003)]
        )

        // A new client of either server gets the same merged state.
        let carol = TestPeer(first, dataset: "family", token: token, siteByte: 0xC3)
        let dave = TestPeer(second, dataset: "family", token: token, siteByte: 0xD4)
        let viaFirst = try carol.pullAll().changes
        let viaSecond = try dave.pullAll().changes
        #expect(try ProtocolJSON.encode(viaFirst) == ProtocolJSON.encode(viaSecond))
        #expect(viaFirst.contains { $0.key["id"] == .text("n2") && $0.op == .delete })
        #expect(viaFirst.contains { $0.columns["title"] == .text("oat milk") })
        #expect(!viaFirst.contains { $0.columns["title"] == .text("soy milk") })
        #expect(viaFirst.contains { $0.columns["body"] == .blob(Data([0, 1, 255])) })
        #expect(viaFirst.contains { $0.columns["body"] == .integer(.max) })
        // And each of alice and bob hears of the other's changes through its own server.
        #expect(try alice.pullAll().changes.contains { $0.site == bob.site && $0.key["id"] == .text("n3") })
        #expect(try bob.pullAll().changes.contains { $0.site == alice.site && $0.key["id"] == .text("n1") })
    }

    /// A rotation of the cursor keys reaches a server that runs on: the first cursor of the new key
    /// that another server (started since) issued makes it read the keys again, sign with the new
    /// one and, after a second rotation, refuse the cursors of the key that one dropped.
    @Test func aServerSeesARotationThatAnotherServerReadFirstWithoutARestart() throws {
        let directory = try TemporaryDirectory()
        let (first, second) = try twoServers(directory)
        let token = try makeDataset(first, "family")
        let alice = TestPeer(first, dataset: "family", token: token, siteByte: 0xA1)
        let viaFirst = TestPeer(first, dataset: "family", token: token, siteByte: 0xB2)
        let viaSecond = TestPeer(second, dataset: "family", token: token, siteByte: 0xB2)
        func keyID(_ cursor: String) -> Substring { cursor.prefix { $0 != "." } }
        func rotateAndRestartFirst() throws {
            let rotation = try run(
                try builtProduct("ostore-server").path, ["cursor-keys", "rotate"] + first.storageArguments)
            #expect(rotation.status == 0, "\(String(decoding: rotation.error, as: UTF8.self))")
            #expect(first.stop() == 0)
            try first.startAgainOnSamePort()
        }
        func push(_ seq: Int64) throws {
            _ = try alice.push([alice.change(.insert, "n\(seq)", ["title": .text("t")], seq: seq)])
        }
        // The empty dataset's snapshot ends at the log's start; both servers sign with key 1.
        let keyOne = try viaSecond.pull(cursor: nil).cursor
        #expect(keyID(keyOne) == "1")
        #expect(keyID(try viaFirst.pull(cursor: keyOne).cursor) == "1")

        try rotateAndRestartFirst()
        try push(1)
        let keyTwo = try viaFirst.pull(cursor: keyOne)
        #expect(keyTwo.changes.count == 1 && keyID(keyTwo.cursor) == "2")
        // The second server, running since before the rotation, serves it and signs with key 2 on.
        try push(2)
        let fromSecond = try viaSecond.pull(cursor: keyTwo.cursor)
        #expect(fromSecond.changes.count == 1 && keyID(fromSecond.cursor) == "2")

        try rotateAndRestartFirst()
        let keyThree = try viaFirst.pull(cursor: fromSecond.cursor)
        #expect(keyID(keyThree.cursor) == "3")
        #expect(keyID(try viaSecond.pull(cursor: keyThree.cursor).cursor) == "3")
        // Key 1 is dropped: the second server, never restarted, refuses its cursors too.
        let refused = try second.request(
            "POST", "/v1/datasets/family/pull", token: token,
            json: try ProtocolJSON.encode(
                PullRequest(
                    protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: viaSecond.site, cursor: keyOne)))
        #expect(refused.status == 400 && refused.errorCode == "invalid_cursor")
    }

    /// A server over a cluster of its own (stopping the shared one would break other tests), a
    /// dataset, and a first change stored by alice.
    private func serverOnAClusterOfItsOwn(_ directory: TemporaryDirectory) throws -> (
        cluster: PostgresCluster, url: String, server: LiveServer, token: String, alice: TestPeer
    ) {
        let cluster = try PostgresCluster()
        let url = try cluster.createDatabase()
        let server = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("data")), backend: .postgres, postgresURL: url)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        #expect(
            try alice.push([alice.change(.insert, "n1", ["title": .text("kept")], seq: 1)]).acknowledgedThrough == 1)
        return (cluster, url, server, token, alice)
    }

    @Test func losingPostgreSQLAnswers503WithRetryAfterStoresNothingAndRecovers() throws {
        let directory = try TemporaryDirectory()
        let (cluster, _, server, token, alice) = try serverOnAClusterOfItsOwn(directory)

        try cluster.stop()
        let batch = (2...50).map { alice.change(.insert, "n\($0)", ["title": .text("lost")], seq: Int64($0)) }
        let body = try ProtocolJSON.encode(
            PushRequest(protocolVersion: 1, schemaVersion: alice.schema.version, site: alice.site, changes: batch))
        for path in ["/v1/datasets/family/push", "/healthz"] {
            let refused =
                path == "/healthz"
                ? try server.request("GET", path) : try server.request("POST", path, token: token, json: body)
            #expect(refused.status == 503, "\(path): \(refused.text)")
            #expect(refused.headers["Retry-After"] == "1", "\(path)")
            #expect(refused.errorCode == "unavailable", "\(path): \(refused.text)")
            #expect(!refused.text.contains("INSERT") && !refused.text.contains("SELECT"), "no SQL in \(refused.text)")
        }

        try cluster.start()
        // The pool reconnects; the refused batch stored nothing, so it is stored whole now.
        #expect(try server.request("GET", "/healthz").status == 200)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        #expect(try bob.pullAll().changes.count == 1)
        #expect(try alice.push(batch).acknowledgedThrough == 50)
        #expect(try bob.pullAll().changes.count == 50)
    }

    /// The database goes away while a push is inside its transaction (held at the dataset's row
    /// lock by another session, so the moment is certain): 503 with Retry-After, nothing of the
    /// batch stored, and the same batch stored whole once the database is back.
    @Test func losingPostgreSQLInTheMiddleOfAPushStoresNothingOfItAndRecovers() throws {
        let directory = try TemporaryDirectory()
        let (cluster, url, server, token, alice) = try serverOnAClusterOfItsOwn(directory)

        let blocker = try PostgresConnection(url: url)
        try blocker.executeScript("BEGIN; SELECT 1 FROM server_datasets WHERE name = 'family' FOR UPDATE")
        let batch = (2...50).map { alice.change(.insert, "n\($0)", ["title": .text("lost")], seq: Int64($0)) }
        let body = try ProtocolJSON.encode(
            PushRequest(protocolVersion: 1, schemaVersion: alice.schema.version, site: alice.site, changes: batch))
        let answer = Locked<RawHTTPResponse?>(nil)
        let answered = DispatchSemaphore(value: 0)
        // A thread of its own: under the whole suite's load a shared queue started this request
        // more than 10 s late once (CI), and the lock below was never waited on in time.
        Thread {
            answer.value = try? server.request("POST", "/v1/datasets/family/push", token: token, json: body)
            answered.signal()
        }.start()
        let watcher = try PostgresConnection(url: url)
        let waiting = PostgresStatement(
            "waitingOnALock", "SELECT count(*)::bigint FROM pg_stat_activity WHERE wait_event_type = 'Lock'", [])
        #expect(eventually(timeout: .seconds(30)) { (try? watcher.execute(waiting).int64(row: 0, column: 0)) == 1 })

        try cluster.stop()
        #expect(answered.wait(timeout: .now() + 30) == .success)
        let refused = try #require(answer.value)
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.headers["Retry-After"] == "1")
        #expect(refused.errorCode == "unavailable", "\(refused.text)")

        try cluster.start()
        #expect(try server.request("GET", "/healthz").status == 200)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        #expect(try bob.pullAll().changes.count == 1)
        #expect(try alice.push(batch).acknowledgedThrough == 50)
        #expect(try bob.pullAll().changes.count == 50)
    }

    @Test func theMigrationRunsOnceAndAnEditedOneIsRefused() throws {
        let url = try PostgresCluster.shared().createDatabase()
        // Several servers starting at once over a new database: one migrates, none fails.
        let storages = Locked<[Result<PostgresSyncStorage, ServerError>]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let storage = Result { () throws(ServerError) in try PostgresSyncStorage(url: url, connections: 1) }
            storages.withLock { $0.append(storage) }
        }
        #expect(storages.withLock { $0 }.allSatisfy { (try? $0.get()) != nil })
        let connection = try PostgresConnection(url: url)
        let ledger = try connection.execute(PostgresSyncStorage.Statements.appliedMigrations)
        #expect(ledger.rowCount == PostgresMigration.all.count)
        #expect(try ledger.string(row: 0, column: 1) == PostgresMigration.all[0].checksum)

        try connection.executeScript("UPDATE ostore_server_migrations SET checksum = 'edited' WHERE version = 1")
        #expect {
            _ = try PostgresSyncStorage(url: url)
        } throws: { error in
            "\(error)".contains("server migration 1 (server tables) was applied with checksum edited")
        }
        try connection.executeScript("UPDATE ostore_server_migrations SET checksum = 'x' WHERE version = 1")
        try connection.executeScript(
            "INSERT INTO ostore_server_migrations (version, name, checksum) VALUES (99, 'n', 'c')")
        #expect {
            _ = try PostgresSyncStorage(url: url)
        } throws: { error in
            "\(error)".contains("migration 99") || "\(error)".contains("checksum x")
        }
    }

    @Test func migrationTwoGivesNewDatasetsAnIncarnationAndLeavesTheEarlierReleasesWithout() throws {
        let url = try PostgresCluster.shared().createDatabase()
        // A database of the release before incarnations, with a dataset that has a log.
        try PostgresMigration.migrate(try PostgresConnection(url: url), PostgresMigration.all.filter { $0.version < 2 })
        try PostgresCluster.shared().execute(
            "INSERT INTO server_datasets (name, last_serial) VALUES ('old', 3)", in: url)

        let storage = try PostgresSyncStorage(url: url, connections: 1)
        let ledger = try PostgresConnection(url: url).execute(PostgresSyncStorage.Statements.appliedMigrations)
        #expect(ledger.rowCount == PostgresMigration.all.count)
        #expect(try ledger.string(row: 1, column: 1) == PostgresMigration.all[1].checksum)
        let site = try #require(SiteID(bytes: Data(repeating: 7, count: 16)))
        // Its devices' cursors carry no incarnation and stay valid across the upgrade.
        #expect(
            try storage.datasetState("old", site: site)
                == DatasetState(incarnation: nil, lastSerial: 3, siteHighWater: 0))
        try storage.createDataset(named: "new")
        let made = try #require(try storage.datasetState("new", site: site).incarnation)
        #expect(made.count == 32 && made.allSatisfy(\.isHexDigit))

        #expect(try storage.renewIncarnations(of: ["old"]) == 1)
        let renewed = try storage.datasetState("old", site: site).incarnation
        #expect(renewed != nil && renewed != made)
        #expect(try storage.datasetState("new", site: site).incarnation == made)
        #expect(try storage.renewIncarnations() == 2)
        #expect(try storage.datasetState("new", site: site).incarnation != made)
        #expect {
            _ = try storage.datasetState("missing", site: site)
        } throws: { error in
            (error as? ServerError)?.kind == .notFound
        }
    }

    @Test func migrationThreeLeavesEarlierEntriesWithoutAFingerprintAndTheNextPushStartsAChain() throws {
        let url = try PostgresCluster.shared().createDatabase()
        // A database of the release before fingerprints, with a dataset that has a log.
        try PostgresMigration.migrate(try PostgresConnection(url: url), PostgresMigration.all.filter { $0.version < 3 })
        try PostgresCluster.shared().execute(
            """
            INSERT INTO server_datasets (name, last_serial, incarnation) VALUES ('old', 2, 'before');
            INSERT INTO server_log (dataset_id, serial, site, body)
                SELECT id, s, '\\x07070707070707070707070707070707'::bytea, '{}' FROM server_datasets, generate_series(1, 2) AS s;
            """, in: url)

        let storage = try PostgresSyncStorage(url: url, connections: 1)
        let site = try #require(SiteID(bytes: Data(repeating: 9, count: 16)))
        #expect(try storage.logChain(dataset: "old", serial: 2) == nil)
        #expect(try storage.datasetState("old", site: site).lastChain == nil)
        let change = Change(
            table: "notes", key: ["id": .text("n3")], op: .insert, columns: ["title": .text("t")],
            clock: ChangeClock(milliseconds: 1_764_000_000_000, counter: 0)!, site: site, seq: 1)
        _ = try storage.storeBatch([change], site: site, clientSchema: SchemaVersion(1, 0), dataset: "old")
        let chain = try #require(try storage.logChain(dataset: "old", serial: 3))
        #expect(chain == LogChain.next(after: nil, body: try change.canonicalJSON()))
        let state = try storage.datasetState("old", site: site)
        #expect(state.lastSerial == 3 && state.lastChain == chain)

        // A server of the earlier release still running beside this one appends an entry: it moves
        // `last_serial` alone. The dataset's newest fingerprint then counts for nothing, and the
        // next push starts a chain again rather than chain on from an older entry's.
        try PostgresCluster.shared().execute(
            """
            INSERT INTO server_log (dataset_id, serial, site, body)
                SELECT id, 4, '\\x07070707070707070707070707070707'::bytea, '{}' FROM server_datasets;
            UPDATE server_datasets SET last_serial = 4;
            """, in: url)
        #expect(try storage.datasetState("old", site: site).lastChain == nil)
        var next = change
        next.key = ["id": .text("n5")]
        next.seq = 2
        _ = try storage.storeBatch([next], site: site, clientSchema: SchemaVersion(1, 0), dataset: "old")
        let fifth = try #require(try storage.logChain(dataset: "old", serial: 5))
        #expect(fifth == LogChain.next(after: nil, body: try next.canonicalJSON()))
        #expect(try storage.datasetState("old", site: site).lastChain == fifth)
    }

    /// docs/POSTGRES.md's backup and restore blocks run as written (the dump in the test's directory,
    /// the URL in `OSTORE_POSTGRES_URL`), and its SQL for where `ostore-server` cannot run.
    @Test func theDocumentedBackupAndRestoreRunAsWritten() throws {
        let guide = "docs/POSTGRES.md"
        let blocks = try DocumentedCode.codeBlocks(ofMarkdown: guide, language: "sh")
        let backUp = try #require(blocks.first { $0.contains("pg_dump") })
        let restore = try #require(blocks.first { $0.contains("pg_restore") })
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")), backend: .postgres)
        let url = try #require(server.postgresURL)
        func shell(_ block: String) throws {
            let tools = try builtProduct("ostore-server").deletingLastPathComponent().path
            let result = try run(
                "/bin/bash",
                [
                    "-c",
                    "set -e; export PATH=\"$0:$1:$PATH\"; "
                        + block.replacingOccurrences(of: "/var/backups", with: directory.url.path),
                    tools, try PostgresCluster.shared().binaries.path,
                ], environment: ["OSTORE_POSTGRES_URL": url])
            #expect(result.status == 0, "\(block): \(String(decoding: result.error, as: UTF8.self))")
        }
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        _ = try alice.push((1...3).map { alice.change(.insert, "n\($0)", ["title": .text("t")], seq: Int64($0)) })
        let site = alice.site
        let made = try server.storage().datasetState("family", site: site).incarnation
        try shell(backUp)
        _ = try alice.push((4...6).map { alice.change(.insert, "n\($0)", ["title": .text("t")], seq: Int64($0)) })
        #expect(server.stop() == 0)
        try shell(restore)

        let restored = try server.storage().datasetState("family", site: site)
        #expect(restored.lastSerial == 3 && restored.siteHighWater == 3)
        #expect(restored.incarnation != nil && restored.incarnation != made)
        let text = try DocumentedCode.text(guide)
        let start = try #require(text.range(of: "this SQL does the same:\n`"))
        let end = try #require(text.range(of: "`", range: start.upperBound..<text.endIndex))
        try PostgresCluster.shared().execute(String(text[start.upperBound..<end.lowerBound]), in: url)
        let renewed = try #require(try server.storage().datasetState("family", site: site).incarnation)
        #expect(renewed != restored.incarnation && renewed.count == 32 && renewed.allSatisfy(\.isHexDigit))
    }

    @Test func bytesAndSixtyFourBitIntegersSurviveTheBinaryFormatExactly() throws {
        let connection = try PostgresConnection(url: try PostgresCluster.shared().createDatabase())
        let statement = PostgresStatement(
            "echo", "SELECT $1::bigint, $2::bytea, $3::float8, $4::text, $5::bigint[]",
            [.int8, .bytea, .float8, .text, .int8Array])
        let bytes = Data((0...255).map { UInt8($0) } + [0, 0])
        for (integer, real) in [(Int64.max, Double.infinity), (Int64.min, -0.1), (0, Double.leastNonzeroMagnitude)] {
            let result = try connection.execute(
                statement,
                [
                    .int8(integer), .bytea(bytes), .float8(real), .text("Ünï \u{1F600}"),
                    .array(.int8, [.int8(1), .null]),
                ])
            #expect(try result.int64(row: 0, column: 0) == integer)
            #expect(try result.data(row: 0, column: 1) == bytes)
            #expect(try result.double(row: 0, column: 2).bitPattern == real.bitPattern)
            #expect(try result.string(row: 0, column: 3) == "Ünï \u{1F600}")
        }
        // A type the caller did not expect is an error naming the statement, without its SQL.
        let result = try connection.execute(
            statement, [.int8(1), .bytea(Data()), .float8(0), .text(""), .array(.int8, [])])
        #expect {
            _ = try result.string(row: 0, column: 0)
        } throws: { error in
            let description = "\(error)"
            return description.contains("echo") && !description.contains("SELECT")
        }
        #expect {
            try connection.execute(PostgresStatement("broken", "SELECT * FROM nowhere", []))
        } throws: { error in
            (error as? PostgresError)?.sqlState == "42P01" && !"\(error)".contains("SELECT")
                && (error as? PostgresError)?.sql == "SELECT * FROM nowhere"
        }
    }
}
