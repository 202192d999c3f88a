import Foundation
import SyncProtocol
import SyncServer
import Testing

/// One token holder of a dataset attacking the devices of another: pushing as a site that is not
/// its own, and moving the dataset to a major no real app has.
extension HostileRequestTests {
    /// The highest `seq` the protocol allows (section 9).
    private static let highestSeq: Int64 = (1 << 53) - 1

    /// A device of dataset `family` with a read-write token of its own.
    private func device(_ server: LiveServer, _ siteByte: UInt8) throws -> TestPeer {
        TestPeer(server, dataset: "family", token: try makeDataset(server, "family"), siteByte: siteByte)
    }

    @Test(arguments: StorageBackend.allCases)
    func aTokenCannotPushOrSayHelloAsASiteAnotherTokenHolds(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let alice = try device(server, 0x0A)
        let mallory = try device(server, 0x0D)
        let bob = try device(server, 0x0B)
        #expect(try alice.hello().verdict == .compatible)
        #expect(
            try alice.push([alice.change(.insert, "n1", ["title": .text("mine")], seq: 1)]).acknowledgedThrough == 1)
        let seen = try bob.pullAll()

        // Mallory's token, Alice's site.
        let forged = alice.change(.update, "n1", ["title": .text("forged")], seq: 2)
        let push = try server.post(
            "push", token: mallory.token,
            PushRequest(protocolVersion: 1, schemaVersion: alice.schema.version, site: alice.site, changes: [forged]))
        #expect(push.status == 403 && push.errorCode == "site_forbidden", "\(push.text)")
        let hello = try server.post(
            "hello", token: mallory.token, HelloRequest(site: alice.site, schema: alice.schema))
        #expect(hello.status == 403 && hello.errorCode == "site_forbidden", "\(hello.text)")
        #expect(try server.storage().datasets().first?.changes == 1)
        #expect(try bob.pullAll(from: seen.cursor).changes.isEmpty)

        // Alice syncs on, and what she pushes next reaches the others.
        #expect(try alice.hello().acknowledgedThrough == 1)
        let next = alice.change(.update, "n1", ["title": .text("still mine")], seq: 2)
        #expect(try alice.push([next]).acknowledgedThrough == 2)
        #expect(try bob.pullAll(from: seen.cursor).changes == [next])
        #expect(try mallory.pullAll().changes.first?.columns["title"] == .text("still mine"))
    }

    /// The black-box attack: another token raises Alice's site's high-water mark to 2^53−1, so that
    /// every push of hers would be acknowledged and dropped as already stored.
    @Test(arguments: StorageBackend.allCases)
    func raisingAnotherSitesHighWaterMarkFromAnotherTokenNoLongerSilencesIt(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let alice = try device(server, 0x0A)
        let mallory = try makeDataset(server, "family")
        let bob = try device(server, 0x0B)
        #expect(try alice.hello().acknowledgedThrough == 0)

        let highest = alice.change(.insert, "x", ["title": .text("x")], seq: Self.highestSeq, clock: 1_764_000_000_000)
        let raise = try server.post(
            "push", token: mallory,
            PushRequest(protocolVersion: 1, schemaVersion: alice.schema.version, site: alice.site, changes: [highest]))
        #expect(raise.status == 403 && raise.errorCode == "site_forbidden", "\(raise.text)")
        // Nor through a push that would wait for the batch it names: refused before it waits, so
        // it takes no place among the pushes of Alice's site that wait.
        let started = ContinuousClock.now
        let waiting = try server.post(
            "push", token: mallory,
            PushRequest(
                protocolVersion: 2, schemaVersion: alice.schema.version, site: alice.site, changes: [highest],
                after: Self.highestSeq - 1))
        #expect(waiting.status == 403 && waiting.errorCode == "site_forbidden", "\(waiting.text)")
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(try server.storage().datasetState("family", site: alice.site).siteHighWater == 0)

        let changes = (1...3).map { alice.change(.insert, "n\($0)", ["title": .text("n\($0)")], seq: Int64($0)) }
        #expect(try alice.push(changes).acknowledgedThrough == 3)
        #expect(try alice.hello().acknowledgedThrough == 3)
        #expect(
            Set(try bob.pullAll().changes.map { $0.key["id"] }) == Set(["n1", "n2", "n3"].map { WireValue.text($0) }))
    }

    @Test(arguments: StorageBackend.allCases)
    func revokingASitesTokenLetsTheNextTokenTakeTheSite(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let storage = try server.storage()
        try storage.createDataset(named: "family")
        let old = try storage.createToken(dataset: "family", readOnly: false)
        let replacement = try storage.createToken(dataset: "family", readOnly: false).secret
        let other = try storage.createToken(dataset: "family", readOnly: false).secret
        let phone = TestPeer(server, dataset: "family", token: old.secret, siteByte: 0x0A)
        #expect(try phone.push([phone.change(.insert, "n1", ["title": .text("a")], seq: 1)]).acknowledgedThrough == 1)
        let replaced = TestPeer(server, dataset: "family", token: replacement, siteByte: 0x0A)
        let early = try server.post("hello", token: replacement, HelloRequest(site: phone.site, schema: phone.schema))
        #expect(early.status == 403 && early.errorCode == "site_forbidden")

        // The operator replaces the phone's token: the site follows the first token to use it next.
        try storage.revokeToken(id: old.id)
        #expect(try replaced.hello().acknowledgedThrough == 1)
        #expect(
            try replaced.push([replaced.change(.update, "n1", ["title": .text("b")], seq: 2)]).acknowledgedThrough == 2)
        let taken = try server.post(
            "push", token: other,
            PushRequest(
                protocolVersion: 1, schemaVersion: phone.schema.version, site: phone.site,
                changes: [phone.change(.update, "n1", ["title": .text("c")], seq: 3)]))
        #expect(taken.status == 403 && taken.errorCode == "site_forbidden")
        #expect(try server.storage().datasetState("family", site: phone.site).siteHighWater == 2)
    }

    /// A read-only token cannot push, so its hello binds nothing: it cannot claim a site before
    /// the device that owns it, and is not refused for a site another token holds.
    @Test(arguments: StorageBackend.allCases)
    func aReadOnlyHelloNeitherClaimsASiteNorIsRefusedForOne(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let reader = TestPeer(
            server, dataset: "family", token: try makeDataset(server, "family", readOnly: true), siteByte: 0x0A)
        let owner = try device(server, 0x0A)
        #expect(try reader.hello().verdict == .compatible)
        #expect(try owner.hello().verdict == .compatible)
        #expect(try owner.push([owner.change(.insert, "n1", ["title": .text("a")], seq: 1)]).acknowledgedThrough == 1)
        #expect(try reader.hello().acknowledgedThrough == 1)
    }

    /// One client announcing major 999999999 must not move the dataset there, where every real
    /// client would be told to upgrade.
    @Test(arguments: StorageBackend.allCases)
    func aHelloOfAFarMajorDoesNotMoveTheDatasetAndRealClientsSyncOn(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let alice = try device(server, 0x0A)
        let bob = try device(server, 0x0B)
        var mallory = try device(server, 0x0D)
        mallory.schema = SchemaDescription(
            version: SchemaVersion(999_999_999, 0), fingerprint: "far", tables: ["notes": ["id"]])
        #expect(try alice.hello().verdict == .compatible)

        let far = try server.post(
            "hello", token: mallory.token, HelloRequest(site: mallory.site, schema: mallory.schema))
        #expect(far.status == 409 && far.errorCode == "major_not_allowed", "\(far.text)")
        #expect(far.text.contains("allow-major --dataset family 999999999"))
        #expect(try server.storage().schemaVersion(of: "family") == SchemaVersion(1, 0))

        let first = alice.change(.insert, "n1", ["title": .text("a")], seq: 1)
        #expect(try alice.push([first]).acknowledgedThrough == 1)
        let hello = try bob.hello()
        #expect(hello.verdict == .compatible && hello.datasetSchemaVersion == SchemaVersion(1, 0))
        #expect(try bob.pullAll().changes.count == 1)

        // A dataset the operator bounds when making it refuses a far major even in its first hello.
        let bounded = try server.storage()
        try bounded.createDataset(named: "bounded")
        try bounded.allowMajor(1, dataset: "bounded")
        let token = try bounded.createToken(dataset: "bounded", readOnly: false).secret
        let refused = try server.request(
            "POST", "/v1/datasets/bounded/hello", token: token,
            json: try ProtocolJSON.encode(HelloRequest(site: mallory.site, schema: mallory.schema)))
        #expect(refused.status == 409 && refused.errorCode == "major_not_allowed")
        #expect(try bounded.schemaVersion(of: "bounded") == nil)
    }

    @Test(arguments: StorageBackend.allCases)
    func withTheOperatorsAllowanceTheDatasetMovesToTheNewMajor(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let old = try device(server, 0x0A)
        var next = try device(server, 0x0B)
        next.schema = SchemaDescription(version: SchemaVersion(2, 0), fingerprint: "f2", tables: ["notes": ["id"]])
        #expect(try old.hello().verdict == .compatible)
        let early = try server.post("hello", token: next.token, HelloRequest(site: next.site, schema: next.schema))
        #expect(early.status == 409 && early.errorCode == "major_not_allowed")

        let storage = try server.storage()
        try storage.allowMajor(2, dataset: "family")
        #expect(try storage.datasets().first?.allowedMajorVersion == 2)
        #expect(try next.hello().datasetSchemaVersion == SchemaVersion(2, 0))
        #expect(try old.hello().verdict == .upgradeRequired)
        // The dataset never moves back, so an allowance below it is refused.
        #expect {
            try storage.allowMajor(1, dataset: "family")
        } throws: { error in
            (error as? ServerError)?.kind == .conflict
        }
    }
}

extension LiveServer {
    /// A protocol message posted to dataset `family`, answered as it is.
    fileprivate func post(_ endpoint: String, token: String, _ message: some Encodable) throws -> RawHTTPResponse {
        try request("POST", "/v1/datasets/family/\(endpoint)", token: token, json: try ProtocolJSON.encode(message))
    }
}
