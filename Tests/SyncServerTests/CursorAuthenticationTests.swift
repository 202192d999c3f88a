import Foundation
import OfflineStore
import SyncProtocol
import Testing

@testable import SyncServer

/// Pull cursors are signed with the deployment's cursor keys (HMAC-SHA256): a cursor the server did
/// not issue for the dataset, or one changed since, is answered `400 invalid_cursor`; a rotation
/// keeps the cursors of the key before and refuses the older ones. Protocol/README.md, section 10.1.
@Suite("Reference server: authenticated pull cursors")
struct CursorAuthenticationTests {
    // Regression: cursors were base64 JSON alone, so a client could make up positions inside its
    // dataset (a garbage snapshot key, duplicate keys, any serial) and the server served them.

    /// What a pull over HTTP answered.
    private struct Answer {
        var status: Int
        var code: String?
        var message: String
        var cursor: String?
        var changes: Int
    }

    private func pull(_ peer: TestPeer, _ cursor: String?, limit: Int? = nil) throws -> Answer {
        let body = try ProtocolJSON.encode(
            PullRequest(
                protocolVersion: 1, schemaVersion: peer.schema.version, site: peer.site, cursor: cursor, limit: limit))
        let response = try peer.server.request(
            "POST", "/v1/datasets/\(peer.dataset)/pull", token: peer.token, json: body)
        let page = response.status == 200 ? try JSONDecoder().decode(PullResponse.self, from: response.body) : nil
        let message = (try? JSONDecoder().decode(ErrorBody.self, from: response.body))?.error.message ?? ""
        return Answer(
            status: response.status, code: response.errorCode, message: message, cursor: page?.cursor,
            changes: page?.changes.count ?? 0)
    }

    /// The key id a cursor names (`ID.PAYLOAD.MAC`).
    private func keyID(_ cursor: String?) -> String? {
        cursor?.split(separator: ".", omittingEmptySubsequences: false).first.map(String.init)
    }

    /// A cursor's JSON, read without checking its MAC.
    private func json(_ cursor: String) throws -> String {
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        return String(
            decoding: try #require(Data(base64URLEncoded: parts.count == 3 ? parts[1] : parts[0])), as: UTF8.self)
    }

    /// `cursor` with its JSON replaced by `json`, its key id and MAC kept.
    private func replacingJSON(of cursor: String, with json: String) -> String {
        var parts = cursor.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        parts[parts.count == 3 ? 1 : 0] = Data(json.utf8).base64URLEncoded
        return parts.joined(separator: ".")
    }

    private func rotate(_ server: LiveServer) throws -> String {
        let result = try run(
            try builtProduct("ostore-server").path, ["cursor-keys", "rotate"] + server.storageArguments)
        #expect(result.status == 0, "\(String(decoding: result.error, as: UTF8.self))")
        return String(decoding: result.output, as: UTF8.self)
    }

    /// A server of `backend` with the dataset `family`, alice who pushed six notes, and bob holding
    /// the cursor of the log's start (issued before the pushes: the empty dataset's snapshot ends
    /// there) and the one after its first three changes.
    private func familyWithSixChanges(_ backend: StorageBackend) throws -> (
        server: LiveServer, bob: TestPeer, start: String, afterThree: String
    ) {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let alice = TestPeer(server, dataset: "family", token: token, siteByte: 0xA1)
        let bob = TestPeer(server, dataset: "family", token: token, siteByte: 0xB2)
        let start = try #require(try pull(bob, nil).cursor)
        _ = try alice.push((1...6).map { alice.change(.insert, "n\($0)", ["title": .text("t")], seq: Int64($0)) })
        let afterThree = try pull(bob, start, limit: 3)
        #expect(afterThree.changes == 3)
        return (server, bob, start, try #require(afterThree.cursor))
    }

    @Test func hmacSHA256GivesRFC4231sValues() throws {
        let cases: [(key: Data, message: String, mac: String)] = [
            (
                Data(repeating: 0x0B, count: 20), "Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
            ),
            (
                Data("Jefe".utf8), "what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
            ),
            (
                Data(repeating: 0xAA, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
            ),
            (Data(), "", "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
        ]
        for (key, message, mac) in cases {
            let computed = try Crypto.hmacSHA256(key: key, message: Data(message.utf8))
            #expect(computed.map { String(format: "%02x", $0) }.joined() == mac, "\(message)")
        }
    }

    @Test(arguments: StorageBackend.allCases)
    func cursorsTheServerDidNotIssueForTheDatasetAreRefused(_ backend: StorageBackend) throws {
        let (server, bob, start, afterThree) = try familyWithSixChanges(backend)
        let issued = try json(afterThree)
        #expect(issued.contains(#""serial":3"#) && issued.contains(#""mark":"#))
        let atStart = try json(start)
        #expect(atStart.contains(#""serial":0"#) && !atStart.contains(#""mark":"#))
        let snapshot = try #require(try pull(bob, nil, limit: 2).cursor)
        let inSnapshot = try json(snapshot)
        #expect(inSnapshot.contains(#"\"n2\""#))
        let otherToken = try makeDataset(server, "other")
        let otherStart = try #require(
            try pull(TestPeer(server, dataset: "other", token: otherToken, siteByte: 0xB2), nil).cursor)
        let incarnation = try #require(try server.storage().datasetState("family", site: bob.site).incarnation)
        let unsigned = { (json: String) in Data(json.utf8).base64URLEncoded }
        let skipping = atStart.replacingOccurrences(of: #""serial":0"#, with: #""serial":5"#)
        let madeUpMAC = try Crypto.hmacSHA256(key: try Crypto.randomBytes(32), message: Data("1.x".utf8))
            .base64URLEncoded

        let forged: [(name: String, cursor: String)] = [
            // Positions a client might make up, unsigned as earlier releases wrote cursors.
            ("any serial", unsigned(#"{"dataset":"family","incarnation":"\#(incarnation)","serial":5}"#)),
            (
                "a garbage snapshot key",
                unsigned(
                    #"{"dataset":"family","incarnation":"\#(incarnation)","snapshot":{"key":"garbage","rowsDone":0,"#
                        + #""rowsTotal":6,"startSerial":6,"table":"notes"}}"#)
            ),
            (
                "duplicate keys",
                unsigned(#"{"dataset":"family","incarnation":"\#(incarnation)","serial":6,"serial":1}"#)
            ),
            // The format of an issued cursor, with a MAC made under another key, or none.
            ("a MAC under another key", "1.\(unsigned(skipping)).\(madeUpMAC)"),
            ("an empty MAC", "1.\(unsigned(skipping))."),
            // An issued cursor with one byte changed: its position, incarnation, fingerprint.
            ("the serial changed", replacingJSON(of: start, with: skipping)),
            (
                "the snapshot key changed",
                replacingJSON(of: snapshot, with: inSnapshot.replacingOccurrences(of: #"\"n2\""#, with: #"\"n5\""#))
            ),
            (
                "the incarnation changed",
                replacingJSON(
                    of: afterThree,
                    with: issued.replacingOccurrences(
                        of: incarnation, with: String(incarnation.dropLast()) + (incarnation.last == "0" ? "1" : "0")))
            ),
            (
                "the fingerprint changed",
                replacingJSON(
                    of: afterThree,
                    with: try #require(
                        issued.range(of: #"(?<="mark":-?)[0-9]"#, options: .regularExpression).map { digit in
                            issued.replacingCharacters(in: digit, with: issued[digit] == "0" ? "1" : "0")
                        }))
            ),
            ("another dataset's cursor", otherStart),
        ]
        for (name, cursor) in forged {
            let answer = try pull(bob, cursor)
            #expect(answer.status == 400 && answer.code == "invalid_cursor", "\(name): \(answer.message)")
        }
        // The cursors the server issued are served as before.
        #expect(try pull(bob, afterThree).changes == 3)
        #expect(try pull(bob, start).changes == 6)
        #expect(try pull(bob, snapshot, limit: 2).changes == 2)
    }

    /// Earlier releases wrote cursors as base64url JSON alone: after the upgrade each device's is
    /// refused once, and it downloads the dataset again.
    @Test(arguments: StorageBackend.allCases)
    func anUnsignedCursorOfAnEarlierReleaseIsRefusedAndTheDeviceDownloadsAgain(_ backend: StorageBackend) throws {
        let (server, bob, _, _) = try familyWithSixChanges(backend)
        let storage = try server.storage()
        let state = try storage.datasetState("family", site: bob.site)
        // As the release before signed cursors issued it after the first four changes.
        let earlier = PullCursor.log(
            4, dataset: "family", incarnation: state.incarnation,
            chain: try storage.logChain(dataset: "family", serial: 4))
        let refused = try pull(bob, try ProtocolJSON.encode(earlier).base64URLEncoded)
        #expect(refused.status == 400 && refused.code == "invalid_cursor")
        #expect(refused.message.contains("pull again without a cursor"))
        #expect(try bob.pullAll().changes.count == 6)
    }

    @Test(arguments: StorageBackend.allCases)
    func aCursorOfThePreviousKeyIsServedAfterOneRotationAndRefusedAfterTwo(_ backend: StorageBackend) throws {
        let (server, bob, _, first) = try familyWithSixChanges(backend)
        #expect(keyID(first) == "1")

        #expect(
            try rotate(server) == "added cursor key 2; cursors signed with key 1 stay valid until the next rotation\n")
        // A server started since signs with the new key and serves the previous key's cursors.
        #expect(server.stop() == 0)
        try server.startAgainOnSamePort()
        let afterOne = try pull(bob, first, limit: 1)
        #expect(afterOne.status == 200 && afterOne.changes == 1, "\(afterOne.message)")
        #expect(keyID(afterOne.cursor) == "2")
        let second = try #require(afterOne.cursor)

        #expect(
            try rotate(server)
                == "added cursor key 3; cursors signed with key 2 stay valid until the next rotation; dropped key 1: "
                + "its cursors are refused\n")
        #expect(server.stop() == 0)
        try server.startAgainOnSamePort()
        let afterTwo = try pull(bob, first)
        #expect(afterTwo.status == 400 && afterTwo.code == "invalid_cursor")
        #expect(afterTwo.message.contains("rotated"))
        let previous = try pull(bob, second)
        #expect(previous.status == 200 && previous.changes == 2, "\(previous.message)")
        #expect(keyID(previous.cursor) == "3")
    }

    /// A service keeps the keys it read: pulls read none from storage until a cursor names a newer
    /// key than it has (another server read a rotation first) or its refresh time has passed.
    @Test(arguments: StorageBackend.allCases)
    func aServiceReadsTheKeysAgainOnlyWhenACursorNamesANewerOneOrItsKeysAreOld(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (inner, _) = try LogChainTests.open(backend, in: directory)
        let storage = CountingStorage(inner)
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let service = SyncService(storage: storage, cursorKeysRefresh: .seconds(3_600))
        func next(_ service: SyncService, _ cursor: String?) throws -> (status: Int, cursor: String?) {
            let answer = try service.pull(family: token, cursor: cursor)
            let status = Int(answer.status.rawValue)
            return (status, status == 200 ? try JSONDecoder().decode(PullResponse.self, from: answer.body).cursor : nil)
        }

        var cursor = try next(service, nil).cursor
        for _ in 0..<20 { cursor = try next(service, cursor).cursor }
        #expect(storage.cursorKeyReads.value == 1)
        #expect(keyID(cursor) == "1")

        // Another process rotates; another server, started since, signs with the new key.
        _ = try inner.rotateCursorKeys()
        let other = SyncService(storage: inner)
        let fromOther = try #require(try next(other, cursor).cursor)
        #expect(keyID(fromOther) == "2")
        // This one still signs with the key it has (the previous one, served everywhere)...
        #expect(keyID(try next(service, cursor).cursor) == "1")
        #expect(storage.cursorKeyReads.value == 1)
        // ...until a cursor of the newer key reaches it: it reads the keys once and signs with it.
        let served = try next(service, fromOther)
        #expect(served.status == 200 && keyID(served.cursor) == "2")
        #expect(storage.cursorKeyReads.value == 2)
        for _ in 0..<5 { #expect(try next(service, served.cursor).status == 200) }
        #expect(storage.cursorKeyReads.value == 2)

        // Two more rotations drop keys 1 and 2; a cursor of the newest makes it drop them too.
        _ = try inner.rotateCursorKeys()
        _ = try inner.rotateCursorKeys()
        let newest = try #require(try next(SyncService(storage: inner), nil).cursor)
        #expect(keyID(newest) == "4")
        #expect(try next(service, newest).status == 200)
        #expect(storage.cursorKeyReads.value == 3)
        #expect(try next(service, served.cursor).status == 400)
        #expect(try next(service, cursor).status == 400)
        // A key older than those it has is refused without a read; one newer than any is read for.
        #expect(try next(service, "0" + served.cursor!.drop { $0 != "." }).status == 400)
        #expect(storage.cursorKeyReads.value == 3)
        #expect(try next(service, "99" + newest.drop { $0 != "." }).status == 400)
        #expect(storage.cursorKeyReads.value == 4)

        // A service whose keys are old at every pull reads them each time, so it signs with a
        // rotated key at once, no cursor needed.
        let refreshing = SyncService(storage: inner, cursorKeysRefresh: .zero)
        #expect(keyID(try next(refreshing, newest).cursor) == "4")
        _ = try inner.rotateCursorKeys()
        #expect(keyID(try next(refreshing, newest).cursor) == "5")
    }

    /// Several servers starting on new storage at once make one first key between them.
    @Test(arguments: StorageBackend.allCases)
    func theFirstKeyIsMadeOnceForEveryServer(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        server.stop()
        let storages = try (0..<4).map { _ in try server.storage() }
        let keys = Locked<[[CursorKey]]>([])
        DispatchQueue.concurrentPerform(iterations: storages.count) { index in
            let read = try? storages[index].cursorKeys()
            keys.withLock { $0.append(read ?? []) }
        }
        let first = try #require(keys.value.first)
        #expect(first.map(\.id) == [1] && first[0].secret.count == 32)
        #expect(keys.value.allSatisfy { $0 == first })
    }

    /// The keys live in the storage the operator backs up; none is ever printed or logged.
    @Test(arguments: StorageBackend.allCases)
    func theKeysAreInTheBackupAndNeverPrinted(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let (server, bob, _, cursor) = try familyWithSixChanges(backend)
        let output = try rotate(server)
        let keys = try server.storage().cursorKeys()
        #expect(keys.map(\.id) == [2, 1])
        let backup = directory.path("backup")
        try server.backUp(to: backup)
        _ = try rotate(server)
        #expect(server.stop() == 0)
        let restore = try #require(try server.restore(from: backup))
        #expect(restore.status == 0, "\(String(decoding: restore.error, as: UTF8.self))")
        #expect(try server.storage().cursorKeys() == keys)

        try server.startAgainOnSamePort()
        // Every dataset has a new incarnation: the cursor issued before the restore is refused.
        #expect(try pull(bob, cursor).code == "invalid_cursor")
        #expect(server.stop() == 0)
        var dumped = ""
        dump(keys, to: &dumped)
        let printed = [
            output, "\(keys)", String(reflecting: keys), dumped,
            try String(contentsOf: server.logFile, encoding: .utf8),
        ]
        for key in keys {
            let forms = [
                key.secret.map { String(format: "%02x", $0) }.joined(), key.secret.base64EncodedString(),
                key.secret.base64URLEncoded,
            ]
            for text in printed { #expect(!forms.contains { text.contains($0) }) }
        }
        #expect("\(keys[0])" == "cursor key 2")
    }

    /// Storage of the release before cursor keys (SQLite server schema 1.4, PostgreSQL migration 3)
    /// has none; its first pull after the upgrade makes the first.
    @Test(arguments: StorageBackend.allCases)
    func storageOfTheReleaseBeforeGetsItsFirstKeyOnFirstNeed(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let storage: any SyncStorage
        switch backend {
        case .sqlite:
            let data = URL(fileURLWithPath: directory.path("data"))
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            let old = try Database(path: data.appendingPathComponent(SQLiteSyncStorage.fileName).path)
            try Migrator(plan: ServerMigrationPlan.self, releasedUpTo: ServerSchemaV1_4.versionIdentifier).migrate(old)
            try old.close()
            storage = try SQLiteSyncStorage(directory: data)
        case .postgres:
            let url = try PostgresCluster.shared().createDatabase()
            try PostgresMigration.migrate(
                try PostgresConnection(url: url), PostgresMigration.all.filter { $0.version < 4 })
            storage = try PostgresSyncStorage(url: url, connections: 1)
        }
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let service = SyncService(storage: storage)
        let answer = try service.pull(family: token, cursor: nil)
        #expect(answer.status.rawValue == 200)
        let cursor = try JSONDecoder().decode(PullResponse.self, from: answer.body).cursor
        #expect(keyID(cursor) == "1")
        #expect(try storage.cursorKeys().map(\.id) == [1])
        #expect(try service.pull(family: token, cursor: cursor).status.rawValue == 200)
    }
}

/// A storage that counts its reads of the cursor keys.
private final class CountingStorage: ForwardingStorage {
    let inner: any SyncStorage
    let cursorKeyReads = Locked(0)

    init(_ inner: any SyncStorage) { self.inner = inner }

    func cursorKeys() throws(ServerError) -> [CursorKey] {
        cursorKeyReads.withLock { $0 += 1 }
        return try inner.cursorKeys()
    }
}
