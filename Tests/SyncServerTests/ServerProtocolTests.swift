import Foundation
import SyncProtocol
import SyncServer
import Testing

@Suite("Reference server: the protocol against a live process")
struct ServerProtocolTests {
    @Test(arguments: StorageBackend.allCases) func everyStorageClassRoundTripsThroughPushAndPull(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        #expect(try alice.hello().verdict == .compatible)
        let values: [String: WireValue] = [
            "id": .text("n1"), "big": .integer(.max), "small": .integer(.min), "ratio": .real(-0.1),
            "huge": .real(.infinity), "title": .text("Ünïcode \u{1F600} \"quoted\""),
            "blob": .blob(Data([0, 255, 10])),
            "none": .null,
        ]
        let ack = try alice.push([alice.change(.insert, "n1", values, seq: 1)])
        #expect(ack == PushResponse(site: alice.site, acknowledgedThrough: 1))

        let pulled = try bob.pullAll()
        #expect(pulled.changes.count == 1)
        #expect(pulled.changes.first?.columns == values)
        #expect(pulled.changes.first?.op == .insert)
        #expect(pulled.changes.first?.site == alice.site)
    }

    @Test(arguments: StorageBackend.allCases) func aReplayedOrOverlappingPushStoresNothingTwiceAndGetsTheSameAnswer(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        let batch = (1...5).map { alice.change(.insert, "n\($0)", ["title": .text("t\($0)")], seq: Int64($0) * 2) }
        let body = try ProtocolJSON.encode(
            PushRequest(protocolVersion: 1, schemaVersion: alice.schema.version, site: alice.site, changes: batch))
        let first = try server.request("POST", "/v1/datasets/family/push", token: token, json: body)
        let replay = try server.request("POST", "/v1/datasets/family/push", token: token, json: body)
        #expect(first.status == 200 && replay.status == 200)
        #expect(first.body == replay.body)
        #expect(try JSONDecoder().decode(PushResponse.self, from: first.body).acknowledgedThrough == 10)

        // Overlapping: seq 6…14, of which 12 and 14 are new.
        let overlap = (3...7).map { alice.change(.insert, "n\($0)", ["title": .text("t\($0)")], seq: Int64($0) * 2) }
        #expect(try alice.push(overlap).acknowledgedThrough == 14)
        let (cursorAfterSnapshot, logChanges) = try logPhase(of: bob)
        _ = cursorAfterSnapshot
        #expect(logChanges.isEmpty)  // everything arrived in the snapshot
        let all = try bob.pullAll().changes
        #expect(all.map(\.key).count == 7)
        let storage = try server.storage()
        #expect(try storage.datasets().first { $0.name == "family" }?.changes == 7)
    }

    /// The changes of the log phase after a first full pull, and the cursor it ends at.
    private func logPhase(of peer: TestPeer) throws -> (String?, [Change]) {
        let first = try peer.pullAll()
        let again = try peer.pullAll(from: first.cursor)
        return (again.cursor, again.changes)
    }

    @Test(arguments: StorageBackend.allCases) func aPullerNeverSkipsOrRepeatsAChangeWhilePushesRun(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "busy")
        let puller = TestPeer(server, dataset: "busy", token: token, siteByte: 0xEE)
        // Starting before any push, the whole history comes through the log phase.
        var cursor = try puller.pullAll().cursor
        let pushers = (1...4).map { TestPeer(server, dataset: "busy", token: token, siteByte: UInt8($0)) }
        let batches = 15
        let perBatch = 40
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for pusher in pushers {
            DispatchQueue.global().async(group: group) {
                do {
                    for batch in 0..<batches {
                        let changes = (0..<perBatch).map { index in
                            let seq = Int64(batch * perBatch + index + 1)
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
        let expected = pushers.count * batches * perBatch
        let deadline = ContinuousClock.now.advanced(by: .seconds(120))
        while seen.count < expected, ContinuousClock.now < deadline {
            let page = try puller.pull(cursor: cursor, limit: 97)
            for change in page.changes { seen["\(change.site)/\(change.seq)", default: 0] += 1 }
            cursor = page.cursor
        }
        group.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        // Drain what is left, then nothing more may come.
        let rest = try puller.pullAll(from: cursor, limit: 97)
        for change in rest.changes { seen["\(change.site)/\(change.seq)", default: 0] += 1 }
        #expect(seen.count == expected)
        #expect(seen.values.allSatisfy { $0 == 1 })
    }

    @Test(arguments: StorageBackend.allCases) func acknowledgedChangesSurviveAKilledServer(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        var acknowledged: Int64 = 0
        for batch in 0..<10 {
            let changes = (1...100).map { index in
                alice.change(.insert, "n\(batch)-\(index)", ["title": .text("t")], seq: Int64(batch * 100 + index))
            }
            acknowledged = try alice.push(changes).acknowledgedThrough
        }
        try server.killAndRestart()
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        let pulled = try bob.pullAll(limit: 5_000).changes
        #expect(acknowledged == 1_000)
        #expect(Set(pulled.map(\.key)).count == 1_000)
        // The site's high-water mark survived too: a replay stores nothing.
        #expect(
            try alice.push([alice.change(.insert, "n0-1", ["title": .text("again")], seq: 1)]).acknowledgedThrough
                == 1_000)
    }

    @Test(arguments: StorageBackend.allCases) func aFirstPullIsTheLiveRowsNotTheHistory(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        var seq: Int64 = 1
        _ = try alice.push([alice.change(.insert, "kept", ["title": .text("v0"), "body": .text("b")], seq: seq)])
        _ = try alice.push([alice.change(.insert, "gone", ["title": .text("v0")], seq: 2)])
        seq = 2
        for round in 0..<20 {
            let overwrites = (1...100).map { index -> Change in
                seq += 1
                return alice.change(.update, "kept", ["title": .text("v\(round)-\(index)")], seq: seq)
            }
            _ = try alice.push(overwrites)
        }
        seq += 1
        _ = try alice.push([alice.change(.delete, "gone", seq: seq)])

        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        let first = try bob.pull(cursor: nil)
        #expect(first.phase == .snapshot)
        // The kept row: its insert and the title's newer version; the deleted row: its tombstone.
        #expect(first.changes.count == 3)
        #expect(first.changes.contains { $0.op == .update && $0.columns["title"] == .text("v19-100") })
        #expect(first.changes.contains { $0.op == .delete && $0.key["id"] == .text("gone") })
        let body = try ProtocolJSON.encode(first)
        #expect(body.count < 2_000)
        let all = try bob.pullAll(from: first.cursor)
        #expect(all.changes.isEmpty)  // the log phase starts after what the snapshot covered
    }

    @Test(arguments: StorageBackend.allCases) func negotiationFollowsTheRulesAndAMajorUpgradeKeepsOlderClientsOut(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let reader = try makeDataset(server, "family", readOnly: true)
        var old = TestPeer(server, dataset: "family", token: token, siteByte: 1)
        var newer = TestPeer(server, dataset: "family", token: token, siteByte: 2)
        var next = TestPeer(server, dataset: "family", token: token, siteByte: 3)
        var readOnlyNext = TestPeer(server, dataset: "family", token: reader, siteByte: 4)
        old.schema.version = SchemaVersion(1, 0)
        newer.schema.version = SchemaVersion(1, 1)
        newer.schema.fingerprint = "f11"
        next.schema.version = SchemaVersion(2, 0)
        next.schema.fingerprint = "f2"
        readOnlyNext.schema = next.schema
        readOnlyNext.schema.version = SchemaVersion(3, 0)
        readOnlyNext.schema.fingerprint = "f3"

        #expect(try old.hello().verdict == .compatible)
        #expect(try newer.hello().verdict == .compatible)
        let stale = try old.hello()
        #expect(stale.verdict == .newerSchemaAvailable && stale.datasetSchemaVersion == SchemaVersion(1, 1))
        // A read-only client does not move the dataset; a new major the operator has not allowed
        // is refused, whatever the token.
        var readOnlyNewMinor = readOnlyNext
        readOnlyNewMinor.schema.version = SchemaVersion(1, 2)
        #expect(try readOnlyNewMinor.hello().verdict == .compatible)
        #expect(try old.hello().datasetSchemaVersion == SchemaVersion(1, 1))
        let unallowed = try server.request(
            "POST", "/v1/datasets/family/hello", token: token,
            json: try ProtocolJSON.encode(HelloRequest(site: next.site, schema: next.schema)))
        #expect(unallowed.status == 409 && unallowed.errorCode == "major_not_allowed")
        // The operator allows release 2 to move it (`ostore-server dataset allow-major`).
        try server.storage().allowMajor(2, dataset: "family")
        let pastTheAllowance = try server.request(
            "POST", "/v1/datasets/family/hello", token: reader,
            json: try ProtocolJSON.encode(HelloRequest(site: readOnlyNext.site, schema: readOnlyNext.schema)))
        #expect(pastTheAllowance.status == 409 && pastTheAllowance.errorCode == "major_not_allowed")
        #expect(try old.hello().datasetSchemaVersion == SchemaVersion(1, 1))
        #expect(try next.hello().verdict == .compatible)
        let refused = try old.hello()
        #expect(refused.verdict == .upgradeRequired && refused.requiredMajorVersion == 2)
        let push = try server.request(
            "POST", "/v1/datasets/family/push", token: token,
            json: try ProtocolJSON.encode(
                PushRequest(
                    protocolVersion: 1, schemaVersion: old.schema.version, site: old.site,
                    changes: [old.change(.insert, "n", ["title": .text("queued")], seq: 1)])))
        #expect(push.status == 409 && push.errorCode == "upgrade_required")
        #expect(push.text.contains("\"requiredMajorVersion\":2"))

        var conflicting = next
        conflicting.schema.fingerprint = "another build"
        let conflict = try server.request(
            "POST", "/v1/datasets/family/hello", token: token,
            json: try ProtocolJSON.encode(HelloRequest(site: conflicting.site, schema: conflicting.schema)))
        #expect(conflict.status == 409 && conflict.errorCode == "schema_conflict")

        let unsupported = try server.post(
            "hello", dataset: "family", token: token,
            HelloRequest(protocolVersions: [7, 9], site: old.site, schema: next.schema), as: HelloResponse.self)
        #expect(unsupported.verdict == .protocolUnsupported && unsupported.protocolVersion == nil)
    }

    @Test(arguments: StorageBackend.allCases) func healthAndMetricsAnswerWithoutAToken(_ backend: StorageBackend) throws
    {
        let server = try LiveServer(backend: backend)
        let health = try server.request("GET", "/healthz")
        #expect(health.status == 200 && health.text == #"{"status":"ok"}"#)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 1)
        _ = try alice.push([alice.change(.insert, "n", ["title": .text("t")], seq: 1)])
        let metrics = try server.request("GET", "/metrics").text
        #expect(metrics.contains(#"ostore_requests_total{route="push",status="200"} 1"#))
        #expect(metrics.contains("ostore_changes_pushed_total 1"))
        #expect(metrics.contains("ostore_request_duration_seconds_count"))
        let open = metrics.split(separator: "\n").first { $0.hasPrefix("ostore_open_connections ") }
        #expect((open?.split(separator: " ").last).flatMap { Int($0) }.map { $0 >= 1 } == true)
    }

    /// `ostore_changes_pushed_total` counts changes stored, as documented: a replayed push is
    /// acknowledged again and counted once.
    @Test(arguments: StorageBackend.allCases) func aReplayedPushIsNotCountedAgain(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 1)
        let changes = (1...3).map { alice.change(.insert, "n\($0)", ["title": .text("t")], seq: Int64($0)) }
        func pushed() throws -> Int? {
            let metrics = try server.request("GET", "/metrics").text
            let line = metrics.split(separator: "\n").first { $0.hasPrefix("ostore_changes_pushed_total ") }
            return line.flatMap { Int($0.split(separator: " ").last ?? "") }
        }
        #expect(try alice.push(changes).acknowledgedThrough == 3)
        #expect(try pushed() == 3)
        #expect(try alice.push(changes).acknowledgedThrough == 3)
        #expect(
            try alice.push(Array(changes.suffix(2)) + [alice.change(.insert, "n4", [:], seq: 4)]).acknowledgedThrough
                == 4)
        #expect(try pushed() == 4)
    }

    @Test(arguments: StorageBackend.allCases) func eachRequestIsOneJSONLogLineWithoutTheToken(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 1)
        _ = try alice.hello()
        _ = try server.request("GET", "/nowhere", token: token)
        server.stop()
        let log = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(!log.contains(token))
        #expect(!log.contains(String(token.dropFirst(4).prefix(20))))
        let requests = try log.split(separator: "\n").compactMap { line in
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        }.filter { $0["method"] != nil }
        #expect(
            requests.map { "\($0["method"]!) \($0["path"]!) \($0["status"]!)" } == [
                "POST /v1/datasets/family/hello 200", "GET /nowhere 404",
            ])
        #expect(requests.allSatisfy { $0["ms"] != nil && $0["time"] != nil })
    }

    @Test(arguments: StorageBackend.allCases) func sigtermStopsTheServerCleanly(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        #expect(server.stop() == 0)
    }
}
