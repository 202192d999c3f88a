import Foundation
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// A server that knows a schema version's definition (Protocol/README.md, section 5.1) refuses
/// every change a client of that version would refuse (section 5.2, "Changes and the schema"),
/// checks a definition's fingerprint, keeps the two kinds of fingerprints apart, and checks the
/// fingerprint before it tells a client of an older major to upgrade (section 11.1).
@Suite("Schema definitions on a live server")
struct SchemaEnforcementTests {
    /// The Reminders sample's schema 1.1.0, from its vector.
    static func definition() throws -> SchemaDefinition {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/schema/reminders-1.1.0.json")
        struct Vector: Decodable { var definition: SchemaDefinition }
        return try JSONDecoder().decode(Vector.self, from: Data(contentsOf: file)).definition
    }

    static func described(_ definition: SchemaDefinition, _ version: SchemaVersion = SchemaVersion(1, 1))
        -> SchemaDescription
    {
        SchemaDescription(version: version, fingerprint: definition.fingerprint, tables: [:], definition: definition)
    }

    static func peer(_ server: LiveServer, token: String, schema: SchemaDescription, siteByte: UInt8 = 1) -> TestPeer {
        var peer = TestPeer(server, dataset: "family", token: token, siteByte: siteByte)
        peer.schema = schema
        return peer
    }

    static func reminder(_ peer: TestPeer, _ op: Change.Operation, _ columns: [String: WireValue], seq: Int64)
        -> Change
    {
        var change = peer.change(op, "r1", columns, seq: seq)
        change.table = "reminders"
        return change
    }

    static let insert: [String: WireValue] = [
        "id": .text("r1"), "title": .text("Milk"), "listID": .text("l1"), "notes": .text("buy oat"),
    ]

    static func hello(_ peer: TestPeer) throws -> RawHTTPResponse {
        try peer.server.request(
            "POST", "/v1/datasets/family/hello", token: peer.token,
            json: try ProtocolJSON.encode(HelloRequest(site: peer.site, schema: peer.schema)))
    }

    static func push(_ peer: TestPeer, _ changes: [Change]) throws -> RawHTTPResponse {
        try peer.server.request(
            "POST", "/v1/datasets/family/push", token: peer.token,
            json: try ProtocolJSON.encode(
                PushRequest(protocolVersion: 1, schemaVersion: peer.schema.version, site: peer.site, changes: changes)))
    }

    /// The issue's case: `notes` is NOT NULL in 1.1.0, and an update setting it to null was stored,
    /// then refused by every device. Now the push is refused, naming the change, and nothing of it
    /// is stored; the change before it is stored once it is pushed alone.
    @Test(arguments: StorageBackend.allCases) func settingANotNullColumnToNullIsRefused(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend)
        let peer = Self.peer(
            server, token: try makeDataset(server, "family"), schema: Self.described(try Self.definition()))
        #expect(try peer.hello().verdict == .compatible)
        let insert = Self.reminder(peer, .insert, Self.insert, seq: 1)
        let refused = try Self.push(peer, [insert, Self.reminder(peer, .update, ["notes": .null], seq: 2)])
        #expect(refused.status == 400 && refused.errorCode == "schema_violation", "\(refused.text)")
        #expect(refused.text.contains(#""changeIndex":1"#) && refused.text.contains("reminders.notes"))
        #expect(try peer.push([]).acknowledgedThrough == 0)
        #expect(try Self.push(peer, [insert]).status == 200)
        let missing = try Self.push(peer, [Self.reminder(peer, .insert, ["id": .text("r1")], seq: 3)])
        #expect(missing.errorCode == "schema_violation" && missing.text.contains("reminders.title"))
        let strict = try Self.push(peer, [Self.reminder(peer, .update, ["priority": .text("high")], seq: 3)])
        #expect(strict.errorCode == "schema_violation" && strict.text.contains("STRICT"))
        let unknown = try Self.push(peer, [Self.reminder(peer, .update, ["colour": .text("red")], seq: 3)])
        #expect(unknown.errorCode == "schema_violation" && unknown.text.contains("colour"))
        #expect(try peer.push([Self.reminder(peer, .update, ["NOTES": .text("oat")], seq: 3)]).acknowledgedThrough == 3)
    }

    /// A fresh device's first download is the merged rows: none of them may hold what a client of
    /// the version refuses (the issue's second run: a row served with `notes` null was refused by
    /// the device and missing there only).
    @Test(arguments: StorageBackend.allCases) func aSnapshotNeverServesARowAClientWouldRefuse(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let peer = Self.peer(
            server, token: try makeDataset(server, "family"), schema: Self.described(try Self.definition()))
        _ = try peer.hello()
        _ = try Self.push(peer, [Self.reminder(peer, .insert, Self.insert, seq: 1)])
        _ = try Self.push(peer, [Self.reminder(peer, .update, ["notes": .null, "title": .null], seq: 2)])
        _ = try Self.push(peer, [Self.reminder(peer, .update, ["listID": .blob(Data([1]))], seq: 3)])
        let fresh = Self.peer(server, token: try makeDataset(server, "family"), schema: peer.schema, siteByte: 2)
        let rows = try fresh.pull(cursor: nil).changes
        #expect(rows.count == 1)
        let rules = SchemaRules(try Self.definition(), version: SchemaVersion(1, 1))
        for row in rows {
            #expect(rules.problem(in: row) == nil, "\(row)")
            #expect(row.columns["notes"] == .text("buy oat"))
        }
    }

    @Test(arguments: StorageBackend.allCases) func aFingerprintThatIsNotTheDefinitionsDigestIsRefused(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        var schema = Self.described(try Self.definition())
        schema.fingerprint = String(repeating: "ab", count: 32)
        let peer = Self.peer(server, token: try makeDataset(server, "family"), schema: schema)
        let answer = try Self.hello(peer)
        #expect(answer.status == 400 && answer.errorCode == "invalid_message", "\(answer.text)")
        #expect(answer.text.contains("canonical text"))
        var odd = try Self.definition()
        odd.tables[0].columns[0].name = "two words"
        let oddPeer = Self.peer(server, token: peer.token, schema: Self.described(odd))
        #expect(try Self.hello(oddPeer).errorCode == "invalid_message")
        // Nothing was recorded: a dataset no client joined.
        #expect(try server.storage().schemaVersion(of: "family") == nil)
    }

    /// Section 11.1: rule 2 (fingerprint) before rule 5 (older major). A build of 1.1.0 other than
    /// the one the dataset knows is a conflict, whatever major the dataset is at now.
    @Test(arguments: StorageBackend.allCases) func theFingerprintComesBeforeTheOlderMajorVerdict(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family", allowingMajor: 2)
        var old = TestPeer(server, dataset: "family", token: token, siteByte: 1)
        old.schema = SchemaDescription(version: SchemaVersion(1, 1), fingerprint: "build-a", tables: [:])
        #expect(try old.hello().verdict == .compatible)
        var next = TestPeer(server, dataset: "family", token: token, siteByte: 2)
        next.schema = SchemaDescription(version: SchemaVersion(2, 0), fingerprint: "build-2", tables: [:])
        #expect(try next.hello().verdict == .compatible)
        #expect(try old.hello().verdict == .upgradeRequired)
        var other = old
        other.schema.fingerprint = "build-b"
        let conflict = try Self.hello(other)
        #expect(conflict.status == 409 && conflict.errorCode == "schema_conflict", "\(conflict.text)")
        // With a definition, against the definition recorded for the version.
        var described = Self.peer(server, token: token, schema: Self.described(try Self.definition()), siteByte: 3)
        described.schema.version = SchemaVersion(1, 2)
        #expect(try described.hello().verdict == .upgradeRequired)
    }

    /// A version first announced without a definition takes the first one a hello brings; each
    /// kind is compared with its own and conflicts only with its own.
    @Test(arguments: StorageBackend.allCases) func fingerprintsOfTheTwoKindsAreKeptApart(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        var legacy = TestPeer(server, dataset: "family", token: token, siteByte: 1)
        legacy.schema = SchemaDescription(version: SchemaVersion(1, 1), fingerprint: "older-client", tables: [:])
        #expect(try legacy.hello().verdict == .compatible)
        // Before any definition: a push under 1.1.0 is not checked against one.
        var unchecked = legacy.change(.insert, "n1", ["title": .null], seq: 1)
        unchecked.table = "anything"
        #expect(try legacy.push([unchecked]).acknowledgedThrough == 1)
        let described = Self.peer(server, token: token, schema: Self.described(try Self.definition()), siteByte: 2)
        #expect(try described.hello().verdict == .compatible)
        var otherBuild = try Self.definition()
        otherBuild.tables[0].columns[6].isNotNull = false
        let conflicting = Self.peer(server, token: token, schema: Self.described(otherBuild), siteByte: 3)
        let conflict = try Self.hello(conflicting)
        #expect(conflict.status == 409 && conflict.errorCode == "schema_conflict", "\(conflict.text)")
        var otherLegacy = legacy
        otherLegacy.schema.fingerprint = "another-older-client"
        #expect(try Self.hello(otherLegacy).errorCode == "schema_conflict")
        #expect(try legacy.hello().verdict == .compatible)
        // Now pushes under 1.1.0 are checked, whoever pushes them.
        let refused = try Self.push(legacy, [Self.reminder(legacy, .update, ["notes": .null], seq: 2)])
        #expect(refused.errorCode == "schema_violation", "\(refused.text)")
    }

    /// A client can name a version no hello described (an older build's, or one made up): its
    /// changes are checked by the nearest definition of the major, so no version lets a change
    /// past that the clients of a described version refuse. Below the described version every
    /// rule holds; above it, what the definition declares, and a new table passes (clients of
    /// the described version stash it).
    @Test(arguments: StorageBackend.allCases) func aVersionWithoutADefinitionIsCheckedByTheNearest(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let described = Self.peer(server, token: token, schema: Self.described(try Self.definition()), siteByte: 1)
        #expect(try described.hello().verdict == .compatible)
        var older = TestPeer(server, dataset: "family", token: token, siteByte: 2)
        older.schema = SchemaDescription(version: SchemaVersion(1, 0, 5), fingerprint: "older-build", tables: [:])
        #expect(try older.hello().verdict == .newerSchemaAvailable)
        let refused = try Self.push(older, [Self.reminder(older, .update, ["notes": .null], seq: 1)])
        #expect(refused.errorCode == "schema_violation", "\(refused.text)")
        #expect(refused.text.contains("1.1.0's is the nearest"), "\(refused.text)")
        var ghost = Self.reminder(older, .update, ["name": .text("x")], seq: 1)
        ghost.table = "ghosts"
        #expect(try Self.push(older, [ghost]).errorCode == "schema_violation")
        #expect(try older.push([Self.reminder(older, .insert, Self.insert, seq: 1)]).acknowledgedThrough == 1)

        var newer = TestPeer(server, dataset: "family", token: token, siteByte: 3)
        newer.schema = SchemaDescription(version: SchemaVersion(1, 2), fingerprint: "newer-build", tables: [:])
        #expect(try newer.hello().verdict == .compatible)
        #expect(
            try Self.push(newer, [Self.reminder(newer, .update, ["notes": .null], seq: 1)]).errorCode
                == "schema_violation")
        #expect(
            try Self.push(newer, [Self.reminder(newer, .update, ["priority": .text("high")], seq: 1)]).errorCode
                == "schema_violation")
        var label = newer.change(.insert, "g1", ["name": .text("red")], seq: 1)
        label.table = "labels"
        let colour = Self.reminder(newer, .update, ["colour": .text("red")], seq: 2)
        #expect(try newer.push([label, colour]).acknowledgedThrough == 2)
    }

    /// A client cannot loosen the rules by announcing a looser definition of another version of
    /// the major (section 7.3): a definition that is not a minor step from, or to, the ones the
    /// dataset has is `409 schema_conflict`, and nothing of it is recorded; a lawful one is.
    @Test(arguments: StorageBackend.allCases) func aDefinitionThatIsNoMinorStepIsRefused(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let definition = try Self.definition()
        #expect(try Self.peer(server, token: token, schema: Self.described(definition)).hello().verdict == .compatible)
        var looser = definition
        let reminders = looser.tables.firstIndex { $0.name == "reminders" }!
        let notes = looser.tables[reminders].columns.firstIndex { $0.name == "notes" }!
        looser.tables[reminders].columns[notes].isNotNull = false
        for version in [SchemaVersion(1, 2), SchemaVersion(1, 0, 9)] {
            let answer = try Self.hello(
                Self.peer(server, token: token, schema: Self.described(looser, version), siteByte: 2))
            #expect(answer.status == 409 && answer.errorCode == "schema_conflict", "\(version): \(answer.text)")
            #expect(answer.text.contains("reminders.notes"), "\(answer.text)")
        }
        #expect(try server.storage().schemaDefinitions(of: "family").keys.sorted() == [SchemaVersion(1, 1)])
        #expect(try server.storage().schemaVersion(of: "family") == SchemaVersion(1, 1))
        // Pushes under 1.2 are still checked by 1.1's rules.
        var mallory = TestPeer(server, dataset: "family", token: token, siteByte: 2)
        mallory.schema = SchemaDescription(version: SchemaVersion(1, 2), fingerprint: "x", tables: [:])
        let refused = try Self.push(mallory, [Self.reminder(mallory, .update, ["notes": .null], seq: 1)])
        #expect(refused.errorCode == "schema_violation", "\(refused.text)")

        var lawful = definition
        lawful.tables[reminders].columns.append(.init(name: "colour", type: "TEXT"))
        let next = Self.peer(server, token: token, schema: Self.described(lawful, SchemaVersion(1, 2)), siteByte: 3)
        #expect(try next.hello().verdict == .compatible)
        #expect(try server.storage().schemaDefinitions(of: "family")[SchemaVersion(1, 2)] == lawful)
    }

    /// A read-only token's hello records nothing, its definition included.
    @Test func aReadOnlyHelloRecordsNoDefinition() throws {
        let server = try LiveServer(backend: .sqlite)
        let reader = Self.peer(
            server, token: try makeDataset(server, "family", readOnly: true),
            schema: Self.described(try Self.definition()))
        #expect(try reader.hello().verdict == .compatible)
        #expect(try server.storage().schemaDefinitions(of: "family").isEmpty)
    }
}
