import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// A dataset served under scope rules, through the service's pull and push: Alice shares
/// "Groceries" with Bob, Carol has her own list. Each user pulls only their part; Bob, removed
/// from Groceries, is told to remove it at his next pull, and his edit to it afterwards is refused
/// as `out_of_scope`; a cursor is another user's to use for no one.
@Suite("Scoped sync through the service")
struct ScopedSyncServiceTests {
    static let rules = ScopeWriteTests.rules

    struct Fixture {
        let service: SyncService
        let storage: any ScopedStorage
        var tokens: [String: String] = [:]
        var seq: Int64 = 0
        let operatorSite = SiteID(bytes: Data(repeating: 0x0A, count: 16))!

        init(_ directory: TemporaryDirectory, _ backend: StorageBackend = .sqlite) throws {
            storage = try ScopedStorages.open(backend, in: directory)
            try storage.createDataset(named: "family")
            let definition = SharedListsSchema.definition
            try storage.recordDefinition(definition, version: SchemaVersion(1, 0), dataset: "family")
            tokens["operator"] = try storage.createToken(dataset: "family", readOnly: false).secret
            for user in ["alice", "bob", "carol"] {
                tokens[user] =
                    try storage.createToken(dataset: "family", readOnly: false, identity: TokenIdentity(subject: user))
                    .secret
            }
            try storage.setScopeRules(ScopedSyncServiceTests.rules, dataset: "family")
            service = SyncService(storage: storage)
        }

        mutating func push(
            _ user: String, site: SiteID,
            _ changes: [(String, Change.Operation, [String: WireValue], [String: WireValue])]
        ) throws -> HTTPResponse {
            let batch = changes.map { table, op, key, columns in
                seq += 1
                return Change(
                    table: table, key: key, op: op, columns: op == .insert ? columns.merging(key) { $1 } : columns,
                    clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
            }
            var headers = HTTPHeaders()
            headers.add(name: "Authorization", value: "Bearer \(tokens[user]!)")
            headers.add(name: "Content-Type", value: "application/json")
            let body = try ProtocolJSON.encode(
                PushRequest(protocolVersion: 2, schemaVersion: SchemaVersion(1, 0), site: site, changes: batch))
            return service.handle(
                HTTPRequest(method: "POST", path: "/v1/datasets/family/push", headers: headers, body: body))
        }

        /// Every page a pull of `user` gives from `cursor`: the rows it brings (table and key) and
        /// those it removes, and the cursor to go on from.
        func pull(_ user: String, site: SiteID, cursor: String?) throws -> (
            rows: Set<String>, removed: Set<String>, cursor: String
        ) {
            var rows: Set<String> = []
            var removed: Set<String> = []
            var cursor = cursor
            while true {
                let answer = try service.pull(family: tokens[user]!, cursor: cursor, site: site, limit: 2)
                guard answer.status.rawValue == 200 else {
                    throw ErrorBody(.invalidCursor, String(decoding: answer.body, as: UTF8.self))
                }
                let page = try JSONDecoder().decode(PullResponse.self, from: answer.body)
                for change in page.changes {
                    rows.insert("\(change.table) \(change.key.values.map { "\($0)" }.sorted())")
                }
                for row in page.removed ?? [] {
                    removed.insert("\(row.table) \(row.key.values.map { "\($0)" }.sorted())")
                }
                cursor = page.cursor
                if !page.hasMore { return (rows, removed, page.cursor) }
            }
        }
    }

    static func site(_ byte: UInt8) -> SiteID { SiteID(bytes: Data(repeating: byte, count: 16))! }
    static func row(_ table: String, _ values: String...) -> String {
        "\(table) \(values.map { "\(WireValue.text($0))" }.sorted())"
    }

    @Test(arguments: StorageBackend.allCases)
    func eachUserPullsTheirPartAndLosesWhatTheyAreRemovedFrom(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        var fixture = try Fixture(directory, backend)
        let ops = Self.site(1)
        #expect(
            try fixture.push(
                "operator", site: ops,
                [
                    (
                        "lists", .insert, ["id": .text("groceries")],
                        ["ownerID": .text("alice"), "name": .text("Groceries")]
                    ),
                    ("listMembers", .insert, ["listID": .text("groceries"), "userID": .text("bob")], [:]),
                    (
                        "reminders", .insert, ["id": .text("milk")],
                        ["listID": .text("groceries"), "title": .text("Milk")]
                    ),
                    ("lists", .insert, ["id": .text("carols")], ["ownerID": .text("carol"), "name": .text("Carol's")]),
                    ("reminders", .insert, ["id": .text("tea")], ["listID": .text("carols"), "title": .text("Tea")]),
                ]
            ).status.rawValue == 200)
        let carol = try fixture.pull("carol", site: Self.site(3), cursor: nil)
        #expect(carol.rows == [Self.row("lists", "carols"), Self.row("reminders", "tea")])
        let bob = try fixture.pull("bob", site: Self.site(2), cursor: nil)
        #expect(
            bob.rows == [
                Self.row("lists", "groceries"), Self.row("listMembers", "groceries", "bob"),
                Self.row("reminders", "milk"),
            ])
        // The operator's token stands outside every scope.
        let everything = try fixture.pull("operator", site: Self.site(9), cursor: nil)
        #expect(everything.rows.count == 5)

        // Alice takes Bob off the list.
        #expect(
            try fixture.push(
                "alice", site: Self.site(4),
                [("listMembers", .delete, ["listID": .text("groceries"), "userID": .text("bob")], [:])]
            ).status.rawValue == 200)
        let after = try fixture.pull("bob", site: Self.site(2), cursor: bob.cursor)
        #expect(after.rows == [])
        #expect(
            after.removed == [
                Self.row("lists", "groceries"), Self.row("listMembers", "groceries", "bob"),
                Self.row("reminders", "milk"),
            ])
        #expect(try fixture.pull("carol", site: Self.site(3), cursor: carol.cursor).rows == [])

        // His edit made afterwards is refused, and names the change.
        let refused = try fixture.push(
            "bob", site: Self.site(2), [("reminders", .update, ["id": .text("milk")], ["title": .text("Oat milk")])])
        #expect(refused.status.rawValue == 403)
        let body = try JSONDecoder().decode(ErrorBody.self, from: refused.body)
        #expect(body.error.code == .outOfScope && body.error.changeIndex == 0)
        #expect(body.error.message.contains("outside the writer's write scope"))

        // Bob's cursor is his alone.
        #expect(throws: ErrorBody.self) { try fixture.pull("alice", site: Self.site(2), cursor: after.cursor) }
    }

    /// Several servers over one PostgreSQL database serve the rules one of them set, from their
    /// next request.
    @Test func rulesSetThroughOneServerScopeThePullsOfAnother() throws {
        let url = try PostgresCluster.shared().createDatabase()
        let first = try PostgresSyncStorage(url: url, connections: 2)
        let second = try PostgresSyncStorage(url: url, connections: 2)
        try first.createDataset(named: "family")
        try first.recordDefinition(SharedListsSchema.definition, version: SchemaVersion(1, 0), dataset: "family")
        let bob = try first.createToken(dataset: "family", readOnly: false, identity: TokenIdentity(subject: "bob"))
        let site = Self.site(1)
        _ = try first.storeBatch(
            [
                Change(
                    table: "lists", key: ["id": .text("groceries")], op: .insert,
                    columns: ["id": .text("groceries"), "ownerID": .text("alice"), "name": .text("Groceries")],
                    clock: ChangeClock(milliseconds: 1_764_000_000_000, counter: 0)!, site: site, seq: 1)
            ], site: site, clientSchema: SchemaVersion(1, 0), dataset: "family")
        let service = SyncService(storage: second)
        func rowsBobPulls() throws -> Int {
            let answer = try service.pull(family: bob.secret, cursor: nil, site: Self.site(2), limit: 100)
            #expect(answer.status.rawValue == 200)
            return try JSONDecoder().decode(PullResponse.self, from: answer.body).changes.count
        }
        #expect(try rowsBobPulls() == 1)
        try first.setScopeRules(Self.rules, dataset: "family")
        #expect(try second.scopeRules(of: "family")?.version == 1)
        #expect(try rowsBobPulls() == 0)
    }

    /// A file that does not fit the dataset's schema is refused with every problem, and not set.
    @Test(arguments: StorageBackend.allCases)
    func rulesThatDoNotFitAreRefusedAndNotSet(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let fixture = try Fixture(directory, backend)
        let broken = Self.rules.replacingOccurrences(of: #""where": "userID""#, with: #""where": "user""#)
        do {
            try fixture.storage.setScopeRules(broken, dataset: "family")
            Issue.record("rules that do not fit were set")
        } catch {
            #expect(error.description.contains("the schema has no column user in listMembers"), "\(error)")
        }
        #expect(try fixture.storage.scopeRules(of: "family")?.version == 1)
    }
}
