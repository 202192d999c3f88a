import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Every subject against every table, reading and writing rows of their own scope and of others',
/// before and after a membership is revoked, with expired tokens, forged cursors, other users'
/// cursors and other datasets': what the service answers is what the rules say of the whole
/// dataset, and no pull page ever carries a row outside its subject's read scope.
@Suite("Scoped sync: the security matrix")
struct ScopeSecurityMatrixTests {
    static let users = ["alice", "bob", "carol", "dave"]
    static let claims = ["alice": ["team": "blue"], "bob": ["team": "blue"], "carol": ["team": "red"], "dave": [:]]

    /// The dataset as the operator pushed it, and the rules' verdicts on it.
    struct Oracle {
        var rows: [ScopedRow: [String: WireValue]] = [:]
        let evaluator: ScopeEvaluator

        func identity(_ user: String) -> ScopeIdentity { ScopeIdentity(subject: user, claims: claims[user]!) }

        func granted(_ access: ScopeRules.Access, _ user: String) -> Set<ScopeBucket> {
            evaluator.grantedBuckets(access, to: identity(user)) { membership, member in
                rows.compactMap { row, values in
                    row.table == membership.table && values[membership.whereColumn] == .text(member)
                        ? values[membership.selectColumn] : nil
                }
            }
        }

        func inScope(_ access: ScopeRules.Access, _ user: String, table: String, values: [String: WireValue]) -> Bool {
            let granted = granted(access, user)
            func inScope(_ table: String, _ values: [String: WireValue]) -> Bool {
                let links = evaluator.links(access, of: table, values: { values[$0] })
                return !links.buckets.isDisjoint(with: granted)
                    || links.parents.contains { parent in
                        rows[ScopeSecurityMatrixTests.row(parent.table, parent.key)].map { inScope(parent.table, $0) }
                            ?? false
                    }
            }
            return inScope(table, values)
        }

        func readable(by user: String) -> Set<ScopedRow> {
            Set(rows.filter { inScope(.read, user, table: $0.key.table, values: $0.value) }.keys)
        }
    }

    static func row(_ table: String, _ key: [String: WireValue]) -> ScopedRow {
        var writer = CanonicalJSONWriter()
        _ = try? writer.write(key)
        return ScopedRow(table: table, key: writer.text)
    }

    static func key(_ table: String, _ values: [String: WireValue]) -> [String: WireValue] {
        let columns = SharedListsSchema.definition.tables.first { $0.name == table }!.columns.filter {
            $0.primaryKeyPosition > 0
        }
        return Dictionary(uniqueKeysWithValues: columns.map { ($0.name, values[$0.name]!) })
    }

    final class Server {
        let storage: any ScopedStorage
        let service: SyncService
        var tokens: [String: String] = [:]
        var seq: Int64 = 0

        init(_ directory: TemporaryDirectory, _ backend: StorageBackend) throws {
            storage = try ScopedStorages.open(backend, in: directory)
            for dataset in ["family", "other"] {
                try storage.createDataset(named: dataset)
                try storage.recordDefinition(
                    SharedListsSchema.definition, version: SchemaVersion(1, 0), dataset: dataset)
                try storage.setScopeRules(ScopeWriteTests.rules, dataset: dataset)
            }
            tokens["operator"] = try storage.createToken(dataset: "family", readOnly: false).secret
            tokens["other"] =
                try storage.createToken(dataset: "other", readOnly: false, identity: TokenIdentity(subject: "alice"))
                .secret
            for user in users {
                tokens[user] =
                    try storage.createToken(
                        dataset: "family", readOnly: false,
                        identity: TokenIdentity(subject: user, claims: claims[user]!)
                    ).secret
            }
            service = SyncService(storage: storage)
        }

        func post(_ endpoint: String, _ token: String, _ body: Data, dataset: String = "family") -> HTTPResponse {
            var headers = HTTPHeaders()
            headers.add(name: "Authorization", value: "Bearer \(token)")
            headers.add(name: "Content-Type", value: "application/json")
            return service.handle(
                HTTPRequest(method: "POST", path: "/v1/datasets/\(dataset)/\(endpoint)", headers: headers, body: body))
        }

        func push(_ user: String, _ change: (String, Change.Operation, [String: WireValue])) throws -> HTTPResponse {
            seq += 1
            let (table, op, values) = change
            let key = ScopeSecurityMatrixTests.key(table, values)
            let site = SiteID(bytes: Data(repeating: UInt8(users.firstIndex(of: user).map { $0 + 1 } ?? 9), count: 16))!
            let body = try ProtocolJSON.encode(
                PushRequest(
                    protocolVersion: 2, schemaVersion: SchemaVersion(1, 0), site: site,
                    changes: [
                        Change(
                            table: table, key: key, op: op,
                            columns: op == .delete
                                ? [:] : op == .insert ? values : values.filter { key[$0.key] == nil },
                            clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq
                        )
                    ]))
            return post("push", tokens[user]!, body)
        }

        /// Every row a download of `user` gives, page by page, each page checked against `allowed`.
        func download(_ user: String, allowed: Set<ScopedRow>) throws -> (rows: Set<ScopedRow>, cursor: String) {
            var rows: Set<ScopedRow> = []
            var cursor: String?
            while true {
                let answer = try pull(user, cursor: cursor)
                #expect(answer.status.rawValue == 200)
                let page = try JSONDecoder().decode(PullResponse.self, from: answer.body)
                for change in page.changes {
                    let row = ScopeSecurityMatrixTests.row(change.table, change.key)
                    #expect(allowed.contains(row), "\(user) received \(row), outside their scope")
                    rows.insert(row)
                }
                cursor = page.cursor
                if !page.hasMore { return (rows, page.cursor) }
            }
        }

        func pull(_ user: String, cursor: String?, token: String? = nil, dataset: String = "family") throws
            -> HTTPResponse
        {
            let site = SiteID(bytes: Data(repeating: 0x70, count: 16))!
            let body = try ProtocolJSON.encode(
                PullRequest(
                    protocolVersion: 3, schemaVersion: SchemaVersion(1, 0), site: site, cursor: cursor, limit: 2))
            return post("pull", token ?? tokens[user]!, body, dataset: dataset)
        }
    }

    static let data: [(String, [String: WireValue])] = [
        ("lists", ["id": .text("L1"), "ownerID": .text("alice"), "name": .text("Groceries")]),
        ("lists", ["id": .text("L2"), "ownerID": .text("carol"), "name": .text("Carol's")]),
        ("listMembers", ["listID": .text("L1"), "userID": .text("bob")]),
        ("reminders", ["id": .text("R1"), "listID": .text("L1"), "title": .text("Milk")]),
        ("reminders", ["id": .text("R2"), "listID": .text("L2"), "title": .text("Tea")]),
        ("notices", ["id": .integer(1), "team": .text("blue")]),
        ("notices", ["id": .integer(2), "team": .text("red")]),
        ("tags", ["name": .text("home")]),
    ]

    @Test(arguments: StorageBackend.allCases)
    func everyAnswerIsWhatTheRulesSayOfTheWholeDataset(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let server = try Server(directory, backend)
        var oracle = Oracle(
            evaluator: try ScopeEvaluator(
                try ScopeRules.read(from: Data(ScopeWriteTests.rules.utf8)), definition: SharedListsSchema.definition))
        for (table, values) in Self.data {
            #expect(try server.push("operator", (table, .insert, values)).status.rawValue == 200)
            oracle.rows[Self.row(table, Self.key(table, values))] = values
        }
        var cursors: [String: String] = [:]
        for user in Self.users {
            let readable = oracle.readable(by: user)
            let (rows, cursor) = try server.download(user, allowed: readable)
            #expect(rows == readable, "\(user)")
            cursors[user] = cursor
        }
        #expect(cursors["dave"].map { _ in oracle.readable(by: "dave").count } == 1, "dave reads the tags alone")

        // Every user writes every row: an update of each, and a new row beside each.
        var fresh = 0
        var answered: [Int: Int] = [:]
        for user in Self.users {
            for (row, values) in oracle.rows.sorted(by: { $0.key < $1.key }) {
                let table = row.table
                var changed = values
                var new = values
                fresh += 1
                switch table {
                case "lists":
                    changed["name"] = .text("by \(user)")
                    new["id"] = .text("N\(fresh)")
                case "reminders":
                    changed["title"] = .text("by \(user)")
                    new["id"] = .text("N\(fresh)")
                case "listMembers": new["userID"] = .text("U\(fresh)")
                case "notices": new["id"] = .integer(Int64(100 + fresh))
                default: new["name"] = .text("N\(fresh)")
                }
                for (op, after) in [(Change.Operation.update, changed), (.insert, new)] {
                    if op == .update && changed == values { continue }
                    let rowNow = Self.row(table, Self.key(table, after))
                    let before = op == .update ? oracle.rows[rowNow] : nil
                    let allowed =
                        (before.map { oracle.inScope(.write, user, table: table, values: $0) } ?? true)
                        && oracle.inScope(.write, user, table: table, values: after)
                    let answer = try server.push(user, (table, op, after))
                    #expect(
                        answer.status.rawValue == (allowed ? 200 : 403),
                        "\(user) \(op) \(rowNow): \(String(decoding: answer.body, as: UTF8.self))")
                    answered[answer.status.rawValue, default: 0] += 1
                    if answer.status.rawValue == 200 { oracle.rows[rowNow] = after }
                }
            }
        }
        #expect(answered[200, default: 0] >= 10 && answered[403, default: 0] >= 10, "\(answered)")
        server.storage.waitUntilFolded()
        for user in Self.users {
            let readable = oracle.readable(by: user)
            #expect(try server.download(user, allowed: readable).rows == readable, "\(user) after the writes")
        }

        // Bob's membership revoked: his next pull removes Groceries, and he can no longer write it.
        #expect(
            try server.push("alice", ("listMembers", .delete, ["listID": .text("L1"), "userID": .text("bob")]))
                .status.rawValue == 200)
        oracle.rows[Self.row("listMembers", ["listID": .text("L1"), "userID": .text("bob")])] = nil
        var removed: [RemovedRow] = []
        var cursor = cursors["bob"]
        while true {
            let page = try JSONDecoder().decode(
                PullResponse.self, from: try server.pull("bob", cursor: cursor).body)
            removed += page.removed ?? []
            cursor = page.cursor
            if !page.hasMore { break }
        }
        #expect(removed.contains(RemovedRow(table: "lists", key: ["id": .text("L1")])))
        // His reminders and membership of it leave before it.
        #expect(removed.last == RemovedRow(table: "lists", key: ["id": .text("L1")]), "\(removed)")
        #expect(
            try server.push("bob", ("reminders", .update, ["id": .text("R1"), "title": .text("late")])).status.rawValue
                == 403)

        // Cursors: forged, another user's, another dataset's; expired tokens; other datasets' tokens.
        var forged = Array(cursors["carol"]!)
        forged[forged.count / 2] = forged[forged.count / 2] == "A" ? "B" : "A"
        for (what, user, cursor, token, dataset) in [
            ("a forged cursor", "carol", String(forged), nil as String?, "family"),
            ("another user's cursor", "carol", cursors["alice"]!, nil, "family"),
            ("a cursor of another dataset", "alice", cursors["alice"]!, server.tokens["other"], "other"),
        ] {
            let answer = try server.pull(user, cursor: cursor, token: token, dataset: dataset)
            let body = try? JSONDecoder().decode(ErrorBody.self, from: answer.body)
            #expect(body?.error.code == .invalidCursor, "\(what): \(String(decoding: answer.body, as: UTF8.self))")
        }
        #expect(try server.pull("alice", cursor: nil, token: server.tokens["other"]).status.rawValue == 403)
        let expiring = try server.storage.createToken(
            dataset: "family", readOnly: false, identity: TokenIdentity(subject: "alice", expiresAt: .now + 1)
        ).secret
        Thread.sleep(forTimeInterval: 1.2)
        #expect(try server.pull("alice", cursor: nil, token: expiring).status.rawValue == 401)
    }
}
