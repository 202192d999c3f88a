import Foundation
import OfflineStore
import SyncProtocol
import SyncServer
import TestSupport
import Testing

@testable import SyncClient

/// The invariant of Protocol/README.md section 5.2 ("Changes and the schema"): **a change the
/// server accepts is applied by every correct client of its version.** Random changes, valid and
/// not, against a schema with NOT NULL columns with and without defaults, STRICT and loose tables,
/// a composite key and every storage class, each pushed to a live server (which knows the schema's
/// definition from the client's hello) and applied by the Swift client's `ChangeLog.apply` to a
/// store that holds nothing but the row the change is about (each change has a key of its own, so
/// one store serves as a fresh one per change). Every change the server accepts must apply; every
/// change the client refuses must have been refused by the server; a change the server refuses
/// and the client does not is allowed only where the server is deliberately stricter (an unknown
/// table or column, which a client of the version keeps in its stash for ever). Every other batch
/// is pushed under a newer minor version no hello described, which the server checks by the
/// definition below it (section 5.2): what it accepts so must apply as well. At the end the
/// server's snapshot applies whole on a new store.
///
/// 2,000 changes per backend by default; `OSTORE_SCHEMA_PROPERTY_CHANGES=100000` runs 100,000, and
/// `OSTORE_SCHEMA_PROPERTY_SEED=N` replays the seed a failure printed.
@Suite("Schema property: what the server accepts, every client applies")
struct SchemaPropertyTests {
    private enum PropertyPlan: MigrationPlan {
        static let schemas: [any VersionedSchema.Type] = [V1.self]
        static let stages: [MigrationStage] = []

        enum V1: VersionedSchema {
            static let versionIdentifier: Schema.Version = "1.0.0"
            static let models: [any Model.Type] = [Item.self, Pair.self, Loose.self]
        }

        enum Item: Model {
            static let tableDefinition = TableDefinition("items", options: [.strict]) {
                Column("id", .text).primaryKey()
                Column("name", .text).notNull()
                Column("count", .integer).notNull().defaults(0)
                Column("ratio", .real)
                Column("note", .text).notNull().defaults("")
                Column("data", .blob)
                Column("anything", .any)
            }
        }

        enum Pair: Model {
            static let tableDefinition = TableDefinition("pairs", options: [.strict, .withoutRowID]) {
                Column("a", .text).notNull()
                Column("b", .blob).notNull()
                Column("weight", .real).notNull().defaults(1.5)
                Column("label", .text)
                PrimaryKey("a", "b")
            }
        }

        enum Loose: Model {
            static let tableDefinition = TableDefinition("loose") {
                Column("id", .text).primaryKey()
                Column("title", .text).notNull()
                Column("size", .integer)
                Column("payload", .blob).notNull().defaults(Data([0]))
            }
        }
    }

    static let changesPerRun = Int(ProcessInfo.processInfo.environment["OSTORE_SCHEMA_PROPERTY_CHANGES"] ?? "") ?? 2_000
    static let seed =
        UInt64(ProcessInfo.processInfo.environment["OSTORE_SCHEMA_PROPERTY_SEED"] ?? "")
        ?? UInt64(Date().timeIntervalSince1970 * 1000)

    @Test(arguments: StorageBackend.allCases) func whatTheServerAcceptsEveryClientApplies(_ backend: StorageBackend)
        throws
    {
        let seed = Self.seed &+ (backend == .postgres ? 1 : 0)
        let started = Date()
        var random = SeededGenerator(seed: seed)
        let cases = (0..<Self.changesPerRun).map { RandomChange.make(index: $0, &random) }
        let directory = try TemporaryDirectory()
        let client = try Store(directory.path("client.sqlite"))
        let server = try LiveServer(backend: backend)
        let pusher = try Pusher(
            server, token: try makeDataset(server, "property"), schema: SchemaDescription(client.log.schema))

        // The rows the updates and deletes are about, on both sides.
        let bases = cases.compactMap(\.base)
        try pusher.pushAll(bases, expectingRefusals: false)
        #expect(try client.log.apply(bases.map(IncomingChange.init), to: client.db).refused.isEmpty)

        let refusedByServer = try pusher.pushAll(cases.map(\.change), expectingRefusals: true)
        let refused = try client.log.apply(cases.map { IncomingChange($0.change) }, to: client.db).refused
        let refusedByClient = Set(refused.map(\.index))
        var divergences: [String] = []
        for (index, item) in cases.enumerated() {
            let serverRefused = refusedByServer[index]
            let clientRefused = refusedByClient.contains(index)
            if clientRefused, serverRefused == nil {
                let reason = refused.first { $0.index == index }?.reason ?? "?"
                divergences.append("accepted by the server, refused by the client (\(reason)): \(item.change)")
            } else if let reason = serverRefused, !clientRefused, !item.serverMayBeStricter {
                divergences.append("refused by the server (\(reason)), applied by the client: \(item.change)")
            }
        }
        #expect(
            divergences.isEmpty,
            Comment(
                rawValue:
                    "seed \(seed) (OSTORE_SCHEMA_PROPERTY_SEED=\(Self.seed)), \(divergences.count) divergences; first: "
                    + "\(divergences.prefix(3).joined(separator: "\n"))"))
        let refusedCount = refusedByServer.count
        #expect(refusedCount > cases.count / 10 && refusedCount < cases.count * 9 / 10, "seed \(seed)")

        // A new device's first download applies whole: names spelt in another case were stored as
        // the definition spells them, so each row is one row.
        let fresh = try Store(directory.path("fresh.sqlite"))
        let snapshot = try pusher.pullAll()
        let outcome = try fresh.log.apply(snapshot.map(IncomingChange.init), to: fresh.db)
        #expect(outcome.refused.isEmpty, "seed \(seed): \(outcome.refused.prefix(3))")
        print(
            "schema property on \(backend): \(cases.count) changes, \(refusedCount) refused by the server, "
                + "\(refusedByClient.count) by the client, snapshot of \(snapshot.count) rows, seed \(seed), "
                + "\(String(format: "%.1f", Date().timeIntervalSince(started))) s")
    }

    private struct Store {
        let db: Database
        let log: ChangeLog

        init(_ path: String) throws {
            db = try Database(path: path)
            log = try ChangeLog.open(db, migrator: try Migrator(plan: PropertyPlan.self))
        }
    }

    /// Pushes as one site, in batches; a batch refused at a change pushes the changes before it,
    /// notes the refused one and goes on after it, as the engine does.
    private final class Pusher {
        let server: LiveServer
        let token: String
        let schema: SchemaDescription
        let client: HTTPClient
        let site = SiteID(bytes: Data(repeating: 0x5c, count: 16))!
        let reader = SiteID(bytes: Data(repeating: 0x7e, count: 16))!
        static let batchSize = 400
        /// A newer minor version of the same major that no hello describes.
        static let undescribedVersion = SchemaVersion(1, 4)

        init(_ server: LiveServer, token: String, schema: SchemaDescription) throws {
            self.server = server
            self.token = token
            self.schema = schema
            client = try HTTPClient()
            for hello in [site, reader] {
                let answer = try post("hello", HelloRequest(site: hello, schema: schema))
                guard answer.status == 200 else { throw UnexpectedReply(status: answer.status, body: answer.text) }
            }
        }

        func post(_ endpoint: String, _ message: some Encodable) throws -> (status: Int, text: String, body: Data) {
            let reply = try client.post(
                server.baseURL.appendingPathComponent("v1/datasets/property/\(endpoint)"),
                headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                body: try ProtocolJSON.encode(message))
            return (reply.status, String(decoding: reply.body, as: UTF8.self), reply.body)
        }

        /// The refused changes' indices in `changes`, with the server's message.
        @discardableResult
        func pushAll(_ changes: [Change], expectingRefusals: Bool) throws -> [Int: String] {
            var refused: [Int: String] = [:]
            var start = 0
            while start < changes.count {
                let end = min(start + Self.batchSize, changes.count)
                let version = (start / Self.batchSize).isMultiple(of: 2) ? schema.version : Self.undescribedVersion
                let answer = try push(Array(changes[start..<end]), version: version)
                if answer.status == 200 {
                    start = end
                    continue
                }
                let error = try JSONDecoder().decode(ErrorBody.self, from: answer.body).error
                guard expectingRefusals, error.code == .schemaViolation, let index = error.changeIndex else {
                    throw UnexpectedReply(status: answer.status, body: answer.text)
                }
                if index > 0 {
                    let prefix = try push(Array(changes[start..<start + index]), version: version)
                    guard prefix.status == 200 else { throw UnexpectedReply(status: prefix.status, body: prefix.text) }
                }
                refused[start + index] = error.message
                start += index + 1
            }
            return refused
        }

        private func push(_ changes: [Change], version: SchemaVersion) throws -> (status: Int, text: String, body: Data)
        {
            try post(
                "push", PushRequest(protocolVersion: 1, schemaVersion: version, site: site, changes: changes))
        }

        func pullAll() throws -> [Change] {
            var cursor: String?
            var changes: [Change] = []
            while true {
                let answer = try post(
                    "pull",
                    PullRequest(
                        protocolVersion: 1, schemaVersion: schema.version, site: reader, cursor: cursor, limit: 1_000))
                guard answer.status == 200 else { throw UnexpectedReply(status: answer.status, body: answer.text) }
                let page = try JSONDecoder().decode(PullResponse.self, from: answer.body)
                // The snapshot only: the log after it holds every change pushed.
                if page.phase == .log { return changes }
                changes += page.changes
                cursor = page.cursor
            }
        }
    }

    struct UnexpectedReply: Error, CustomStringConvertible {
        let status: Int
        let body: String
        var description: String { "HTTP \(status): \(body)" }
    }
}

/// One random change of ``SchemaPropertyTests``: the change, the valid insert of its row pushed
/// and applied first (for updates and deletes), and whether the server may refuse it where the
/// client keeps it (see the suite's comment).
private struct RandomChange {
    var change: Change
    var base: Change?
    var serverMayBeStricter: Bool

    struct ColumnShape {
        let name: String
        /// The class a valid value has; nil for ANY.
        let storage: StorageClassName?
        let notNull: Bool
    }

    enum StorageClassName: CaseIterable { case integer, real, text, blob }

    struct TableShape {
        let name: String
        let strict: Bool
        let key: [ColumnShape]
        let columns: [ColumnShape]
    }

    static let tables: [TableShape] = [
        TableShape(
            name: "items", strict: true, key: [ColumnShape(name: "id", storage: .text, notNull: true)],
            columns: [
                ColumnShape(name: "name", storage: .text, notNull: true),
                ColumnShape(name: "count", storage: .integer, notNull: true),
                ColumnShape(name: "ratio", storage: .real, notNull: false),
                ColumnShape(name: "note", storage: .text, notNull: true),
                ColumnShape(name: "data", storage: .blob, notNull: false),
                ColumnShape(name: "anything", storage: nil, notNull: false),
            ]),
        TableShape(
            name: "pairs", strict: true,
            key: [
                ColumnShape(name: "a", storage: .text, notNull: true),
                ColumnShape(name: "b", storage: .blob, notNull: true),
            ],
            columns: [
                ColumnShape(name: "weight", storage: .real, notNull: true),
                ColumnShape(name: "label", storage: .text, notNull: false),
            ]),
        TableShape(
            name: "loose", strict: false, key: [ColumnShape(name: "id", storage: .text, notNull: true)],
            columns: [
                ColumnShape(name: "title", storage: .text, notNull: true),
                ColumnShape(name: "size", storage: .integer, notNull: false),
                ColumnShape(name: "payload", storage: .blob, notNull: true),
            ]),
    ]

    static let site = SiteID(bytes: Data(repeating: 0x5c, count: 16))!
    static let start: Int64 = 1_764_000_000_000

    static func make(index: Int, _ random: inout SeededGenerator) -> RandomChange {
        let table = tables.randomElement(using: &random)!
        let op = [Change.Operation.insert, .insert, .update, .update, .delete].randomElement(using: &random)!
        var stricter = false
        // The key: its own for every change; a value of another class now and then.
        var key: [String: WireValue] = [:]
        var keyValues: [String: WireValue] = [:]
        var keyFitsItsTable = true
        for column in table.key {
            var value = validValue(column.storage!, "\(op.rawValue)\(index)", &random)
            if Int.random(in: 0..<25, using: &random) == 0 {
                value = otherValue(than: column.storage!, "\(op.rawValue)\(index)", &random)
                if table.strict { keyFitsItsTable = false }
            }
            key[spelled(column.name, &random)] = value
            keyValues[column.name] = value
        }
        if Int.random(in: 0..<40, using: &random) == 0 {
            // A key that is not the table's: a column left out, or a column that is not a key column.
            if table.key.count > 1 {
                key.removeValue(forKey: key.keys.sorted().last!)
            } else {
                key = [table.columns[0].name: key.values.first!]
            }
        }
        var columns: [String: WireValue] = [:]
        // What section 5.2 refuses as `invalid_change` is not generated: a key column among an
        // update's columns, or among an insert's with another value; an update of no column.
        let keyNames = Set(key.keys.map { $0.lowercased() })
        let others = table.columns.filter { !keyNames.contains($0.name.lowercased()) }
        switch op {
        case .insert:
            for column in others where Int.random(in: 0..<10, using: &random) < 8 {
                columns[spelled(column.name, &random)] = value(for: column, &random)
            }
            if Bool.random(using: &random) {
                for (name, value) in key { columns[name] = value }
            }
        case .update:
            let count = Int.random(in: 1...others.count, using: &random)
            for column in others.shuffled(using: &random).prefix(count) {
                columns[spelled(column.name, &random)] = value(for: column, &random)
            }
        case .delete: break
        }
        if op != .delete, Int.random(in: 0..<30, using: &random) == 0 {
            columns["extra"] = .text("a column of no version")
            stricter = true
        }
        var name = spelled(table.name, &random)
        if Int.random(in: 0..<40, using: &random) == 0 {
            name = "ghosts"
            stricter = true
        }
        let change = Change(
            table: name, key: key, op: op, columns: columns,
            clock: ChangeClock(validMilliseconds: start + 10 + Int64(index), counter: 0), site: site,
            seq: 1_000_000 + Int64(index))
        var base: Change?
        if op != .insert, keyFitsItsTable {
            var row: [String: WireValue] = keyValues
            for column in table.columns { row[column.name] = validValue(column.storage ?? .text, "base", &random) }
            base = Change(
                table: table.name, key: keyValues, op: .insert, columns: row,
                clock: ChangeClock(validMilliseconds: start, counter: 0), site: site, seq: 1 + Int64(index))
        }
        return RandomChange(change: change, base: base, serverMayBeStricter: stricter)
    }

    /// The name as declared, or now and then in upper case (names ignore ASCII case).
    static func spelled(_ name: String, _ random: inout SeededGenerator) -> String {
        Int.random(in: 0..<10, using: &random) == 0 ? name.uppercased() : name
    }

    /// Mostly a value of the column's class; sometimes null, sometimes another class.
    static func value(for column: ColumnShape, _ random: inout SeededGenerator) -> WireValue {
        switch Int.random(in: 0..<20, using: &random) {
        case 0..<2: return .null
        case 2..<4: return otherValue(than: column.storage ?? .text, "x", &random)
        default:
            return validValue(column.storage ?? StorageClassName.allCases.randomElement(using: &random)!, "v", &random)
        }
    }

    static func validValue(_ storage: StorageClassName, _ text: String, _ random: inout SeededGenerator) -> WireValue {
        switch storage {
        case .integer: .integer(Int64.random(in: .min ... .max, using: &random))
        case .real:
            Bool.random(using: &random)
                ? .real(Double.random(in: -1e6...1e6, using: &random))
                : .integer(Int64.random(in: -99...99, using: &random))
        case .text: .text(text + String(Int.random(in: 0..<1_000_000, using: &random)))
        case .blob:
            .blob(
                Data((0..<Int.random(in: 0..<9, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            )
        }
    }

    /// A value of a class other than `storage`'s, made from `tag` (a key's values are the change's
    /// own, so no two changes are about one row).
    static func otherValue(than storage: StorageClassName, _ tag: String, _ random: inout SeededGenerator)
        -> WireValue
    {
        let others: [StorageClassName] =
            switch storage {
            // An integer is a valid REAL: another class is text or a blob.
            case .real: [.text, .blob]
            default:
                StorageClassName.allCases.filter { $0 != storage && !($0 == .real && storage == .integer) } + [.real]
            }
        return switch others.randomElement(using: &random)! {
        case .integer: .integer(Int64.random(in: .min ... .max, using: &random))
        case .real: .real(Double.random(in: -1e9...1e9, using: &random))
        case .text: .text(tag + String(Int.random(in: 0..<1_000_000, using: &random)))
        case .blob: .blob(Data((tag + String(Int.random(in: 0..<1_000_000, using: &random))).utf8))
        }
    }
}
