import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import SyncServer
import TestSupport
import Testing

@testable import SyncClient

/// What the client announces of its schema (Protocol/README.md, section 5.1), built from the real
/// Reminders schemas and checked against the vectors, and what it does with a change the server
/// refuses as a `schema_violation`.
@Suite("Schema definitions: the client")
struct SchemaDefinitionClientTests {
    struct Vector: Decodable {
        var definition: SchemaDefinition
        var canonicalText: String
        var fingerprint: String
    }

    static func vector(_ name: String) throws -> Vector {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Protocol/vectors/schema/\(name).json")
        return try JSONDecoder().decode(Vector.self, from: Data(contentsOf: file))
    }

    static let releases: [(any VersionedSchema.Type, String)] = [
        (RemindersSchemaV1.self, "reminders-1.0.0"), (RemindersSchemaV1_1.self, "reminders-1.1.0"),
        (RemindersSchemaV2.self, "reminders-2.0.0"),
    ]

    @Test func theRemindersSchemasAreTheirVectors() throws {
        for (schema, name) in Self.releases {
            let vector = try Self.vector(name)
            let definition = SchemaDefinition(try schema.snapshot())
            #expect(definition.canonicalText == vector.canonicalText, "\(name)")
            #expect(definition.fingerprint == vector.fingerprint, "\(name)")
            let byName = { (tables: [SchemaDefinition.Table]) in tables.sorted { $0.name < $1.name } }
            #expect(byName(definition.tables) == byName(vector.definition.tables), "\(name)")
        }
    }

    /// The hello carries the definition, and its fingerprint is the definition's digest: the
    /// server recomputes it and refuses any other.
    @Test func theHelloAnnouncesTheDefinitionAndItsDigest() throws {
        let snapshot = try RemindersSchemaV1_1.snapshot()
        let announced = SchemaDescription(snapshot)
        #expect(announced.definition == SchemaDefinition(snapshot))
        #expect(announced.fingerprint == SchemaDefinition(snapshot).fingerprint)
        #expect(announced.definitionProblem(limits: .standard) == nil)
        #expect(announced.tables["reminders"]?.contains("notes") == true)
    }

    /// Regression: an integer for the TEXT key of a STRICT table was stored by SQLite as text, so
    /// the store keyed the row otherwise than the server; it is refused as the server refuses it.
    @Test func aStrictKeyOfAnotherClassIsRefused() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("store.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        let site = SiteID(bytes: Data(repeating: 3, count: 16))!
        let change = Change(
            table: "remindersLists", key: ["id": .integer(5)], op: .insert, columns: ["name": .text("Home")],
            clock: ChangeClock(validMilliseconds: 1_764_000_000_000, counter: 0), site: site, seq: 1)
        let outcome = try log.apply([IncomingChange(change)], to: db)
        #expect(outcome.refused.count == 1)
        #expect(outcome.refused.first?.reason.contains("STRICT") == true)
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM remindersLists") == 0)
    }

    /// A push the server answers `400 schema_violation` naming one change: the changes before it
    /// are pushed, it is kept as refused with the code, and the changes after it go in the next
    /// round, as for `invalid_change`.
    @Test func aSchemaViolationIsKeptAsRefusedAndTheRestIsPushed() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("server")))
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let transport = RefusingTransport(service: SyncService(storage: storage))
        let db = try Database(path: directory.path("store.sqlite"))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        let engine = SyncEngine(
            db: db, log: log, transport: transport,
            configuration: SyncEngine.Configuration(
                server: URL(string: "http://sync.invalid")!, dataset: "family", token: token))
        for (id, name) in [("A", "One"), ("B", RefusingTransport.refusedName), ("C", "Three")] {
            try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(id), \(name))")
        }
        let report = try engine.sync()
        #expect(report.refusedOutgoing == 1 && report.pushed == 2)
        let rejected = try log.refusedOutgoingChanges(db)
        #expect(rejected.map(\.code) == ["schema_violation"])
        #expect(rejected.first?.change.contains(RefusingTransport.refusedName) == true)
        #expect(try log.pendingCount(db) == 0)
        let stored = try storage.readLog(
            dataset: "family", after: 0, excluding: SiteID(bytes: Data(count: 16))!, limit: 10)
        #expect(stored.count == 2 && !stored.entries.contains { $0.contains(RefusingTransport.refusedName) })
    }
}

/// Hands requests to a `SyncService`, but answers a push holding a list named ``refusedName`` as a
/// server that knows a stricter rule would: `400 schema_violation` naming that change.
private final class RefusingTransport: SyncTransport, Sendable {
    static let refusedName = "Refused by the schema"
    let service: SyncService

    init(service: SyncService) { self.service = service }

    func post(_ url: URL, headers: [(String, String)], body: Data) throws(SyncError) -> TransportReply {
        if url.path.hasSuffix("/push"), let push = try? JSONDecoder().decode(PushRequest.self, from: body),
            let index = push.changes.firstIndex(where: { $0.columns["name"] == .text(Self.refusedName) })
        {
            let error = ErrorBody(
                .schemaViolation, "change \(index): column remindersLists.name breaks a rule", changeIndex: index)
            return TransportReply(status: 400, body: (try? ProtocolJSON.encode(error)) ?? Data())
        }
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        let response = service.handle(HTTPRequest(method: "POST", path: url.path, headers: fields, body: body))
        return TransportReply(status: response.status.rawValue, body: response.body)
    }
}
