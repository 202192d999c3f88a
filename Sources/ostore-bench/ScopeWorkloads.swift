import Foundation
import SyncProtocol
import SyncServer

/// `ostore-bench scope`: scoped sync on the embedded SQLite storage, each figure against the same
/// work without rules in the same run, through the service's request handling in this process
/// (authentication, decoding, storage, encoding; no sockets on either side).
///
/// A dataset of `rows` reminders (1,000,000 by default) on lists of 1,000, owned by 100 users
/// in turn, served under rules that give each user their lists (and the lists shared with them)
/// and the lists' reminders: one user sees 1%. Beside it, two datasets without rules: the same
/// rows (the push's reference), and just that user's rows (the downloads' reference: what the
/// user would download were the dataset theirs alone).
/// - first sync: the user's first download of their 1% against a first download of the small
///   dataset (target ≤ 2x);
/// - push: 10,000 reminders pushed by the user onto their own lists, the fold included (a scoped
///   push waits for it), against the same push onto the same rows without rules and its fold
///   (≤ 1.25x): what the rules add to the server's work per change, the size of the state apart.
///   The requests are encoded before the clock starts, so the figures are the server's alone;
/// - membership: a list of 10,000 reminders shared with the user, from the push of the
///   membership to the end of the pull that brings the rows, against the small dataset's first
///   download (≤ 2x).
struct ScopeWorkloads {
    let options: BenchmarkOptions

    static let rulesText = """
        {"tables": {
          "lists": {
            "read": [
              {"column": "ownerID", "equals": "subject"},
              {"column": "id", "in": {"table": "listMembers", "select": "listID", "where": "userID"}}
            ],
            "write": [{"column": "ownerID", "equals": "subject"}]
          },
          "listMembers": {"read": [{"parent": "lists"}], "write": [{"parent": "lists"}]},
          "reminders": {
            "read": [{"parent": "lists"}],
            "write": [{"column": "listID", "in": {"table": "lists", "select": "id", "where": "ownerID"}}]
          }
        }}
        """

    static let definition = SchemaDefinition(tables: [
        .init(
            name: "lists", isStrict: true,
            columns: [
                .init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "ownerID", type: "TEXT"),
                .init(name: "name", type: "TEXT"),
            ]),
        .init(
            name: "listMembers", isStrict: true,
            columns: [
                .init(name: "listID", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "userID", type: "TEXT", isNotNull: true, primaryKeyPosition: 2),
            ],
            foreignKeys: [.init(columns: ["listID"], parentTable: "lists", parentColumns: ["id"])]),
        .init(
            name: "reminders", isStrict: true,
            columns: [
                .init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                .init(name: "listID", type: "TEXT"),
                .init(name: "title", type: "TEXT"),
                .init(name: "isDone", type: "INTEGER"),
            ],
            foreignKeys: [.init(columns: ["listID"], parentTable: "lists", parentColumns: ["id"])]),
    ])

    static let users = 100
    static let listSize = 1_000
    static let movedRows = 10_000
    static let pageLimit = 1_000
    /// The user whose device is measured.
    static let user = "u07"

    struct Result: Encodable {
        let workload: String
        let scopedMilliseconds: Double
        let referenceMilliseconds: Double
        let target: Double
        var ratio: Double { scopedMilliseconds / referenceMilliseconds }

        enum CodingKeys: String, CodingKey {
            case workload, target, ratio
            case scopedMilliseconds = "scoped_ms"
            case referenceMilliseconds = "reference_ms"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(workload, forKey: .workload)
            try container.encode((scopedMilliseconds * 1000).rounded() / 1000, forKey: .scopedMilliseconds)
            try container.encode((referenceMilliseconds * 1000).rounded() / 1000, forKey: .referenceMilliseconds)
            try container.encode((ratio * 1000).rounded() / 1000, forKey: .ratio)
            try container.encode(target, forKey: .target)
        }
    }

    static func table(_ results: [Result]) -> String {
        let width = max(8, results.map(\.workload.count).max() ?? 0)
        func pad(_ text: String, _ count: Int) -> String { text.padding(toLength: count, withPad: " ", startingAt: 0) }
        var lines = ["\(pad("workload", width))   scoped (ms)   without rules (ms)   ratio   target"]
        for result in results {
            lines.append(
                pad(result.workload, width)
                    + String(
                        format: "   %11.1f   %18.1f   %5.2fx   ≤ %.2fx", result.scopedMilliseconds,
                        result.referenceMilliseconds, result.ratio, result.target))
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ results: [Result]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    func run() throws -> [Result] {
        let rows = max(options.rows ?? 1_000_000, Self.users * Self.listSize)
        let runs = max(1, min(options.runs, 5))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ostore-bench-scope-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Each dataset in storage of its own: the small one is served as it would be alone.
        var storages: [String: SQLiteSyncStorage] = [:]
        for dataset in ["scoped", "whole", "plain"] {
            storages[dataset] = try SQLiteSyncStorage(directory: directory.appendingPathComponent(dataset), folds: true)
        }
        var server = BenchServer(services: storages.mapValues { SyncService(storage: $0) })
        for (dataset, storage) in storages {
            try storage.createDataset(named: dataset)
            _ = try storage.recordSchema(
                SchemaDescription(
                    version: SchemaVersion(1, 0), fingerprint: Self.definition.fingerprint,
                    tables: Dictionary(
                        uniqueKeysWithValues: Self.definition.tables.map { ($0.name, $0.columns.map(\.name)) }),
                    definition: Self.definition),
                dataset: dataset, mayMoveDataset: true)
            server.tokens["operator-\(dataset)"] = try storage.createToken(dataset: dataset, readOnly: false).secret
            server.tokens["\(Self.user)-\(dataset)"] =
                try storage.createToken(dataset: dataset, readOnly: false, identity: TokenIdentity(subject: Self.user))
                .secret
        }
        try storages["scoped"]!.setScopeRules(Self.rulesText, dataset: "scoped")

        // The dataset, and the lists each run shares with the user (another user's, 10,000 rows each).
        let lists = rows / Self.listSize
        var changes: [Change] = []
        func flush(_ dataset: String, force: Bool = false) throws {
            while changes.count >= Self.pageLimit || (force && !changes.isEmpty) {
                let batch = Array(changes.prefix(Self.pageLimit))
                changes.removeFirst(batch.count)
                try server.push(batch, as: "operator-\(dataset)", dataset: dataset, site: 1)
            }
        }
        for list in 0..<lists {
            let owner = "u" + String(format: "%02d", list % Self.users)
            for dataset in owner == Self.user ? ["scoped", "whole", "plain"] : ["scoped", "whole"] {
                changes.append(server.insert("lists", ["id": .text("L\(list)"), "ownerID": .text(owner)], site: 1))
                for index in 0..<Self.listSize {
                    changes.append(server.reminder("R\(list)-\(index)", list: "L\(list)", site: 1))
                }
                try flush(dataset, force: true)
            }
        }
        for run in 0..<runs {
            changes.append(server.insert("lists", ["id": .text("S\(run)"), "ownerID": .text("u99")], site: 1))
            for index in 0..<Self.movedRows {
                changes.append(server.reminder("S\(run)-\(index)", list: "S\(run)", site: 1))
            }
            try flush("scoped", force: true)
        }
        for storage in storages.values { storage.waitUntilFolded() }

        // The measured user's lists: lists are owned in turn.
        let ownLists = Array(stride(from: Int(Self.user.dropFirst())!, to: lists, by: Self.users))
        var firstSync: [(Double, Double)] = []
        var push: [(Double, Double)] = []
        var membership: [(Double, Double)] = []
        for run in 0..<runs {
            var scopedCursor: String?
            let scoped = try Self.milliseconds {
                scopedCursor = try server.download(as: "\(Self.user)-scoped", dataset: "scoped", after: nil)
            }
            let plain = try Self.milliseconds {
                _ = try server.download(as: "\(Self.user)-plain", dataset: "plain", after: nil)
            }
            firstSync.append((scoped, plain))

            // `mirror` takes the same push, unmeasured: the small dataset stays the user's part of
            // the scoped one for the next run's downloads.
            func ownPush(_ dataset: String, mirror: String? = nil) throws -> Double {
                let bodies = try (0..<(Self.movedRows / Self.pageLimit)).map { batch in
                    try server.pushBody(
                        (0..<Self.pageLimit).map { index in
                            server.reminder(
                                "P\(run)-\(batch)-\(index)", list: "L\(ownLists[index % ownLists.count])", site: 2)
                        }, site: 2)
                }
                let elapsed = try Self.milliseconds {
                    for body in bodies { try server.post(push: body, as: "\(Self.user)-\(dataset)", dataset: dataset) }
                    storages[dataset]!.waitUntilFolded()
                }
                if let mirror {
                    for body in bodies { try server.post(push: body, as: "\(Self.user)-\(mirror)", dataset: mirror) }
                    storages[mirror]!.waitUntilFolded()
                }
                return elapsed
            }
            push.append((try ownPush("scoped"), try ownPush("whole", mirror: "plain")))

            let cursor = try server.download(as: "\(Self.user)-scoped", dataset: "scoped", after: scopedCursor)
            let shared = try Self.milliseconds {
                try server.push(
                    [server.insert("listMembers", ["listID": .text("S\(run)"), "userID": .text(Self.user)], site: 1)],
                    as: "operator-scoped", dataset: "scoped", site: 1)
                let received = try server.downloadCounting(as: "\(Self.user)-scoped", dataset: "scoped", after: cursor)
                guard received >= Self.movedRows else {
                    throw BenchmarkFailure(
                        description: "the shared list brought \(received) rows, not \(Self.movedRows)")
                }
            }
            membership.append((shared, plain))
        }
        func median(_ pairs: [(Double, Double)]) -> (Double, Double) {
            let ratios = pairs.sorted { $0.0 / $0.1 < $1.0 / $1.1 }
            return ratios[ratios.count / 2]
        }
        let first = median(firstSync)
        let pushed = median(push)
        let moved = median(membership)
        return [
            Result(
                workload: "first sync of 1% of \(rows) rows", scopedMilliseconds: first.0,
                referenceMilliseconds: first.1, target: 2.0),
            Result(
                workload: "push of \(Self.movedRows) changes, fold included", scopedMilliseconds: pushed.0,
                referenceMilliseconds: pushed.1, target: 1.25),
            Result(
                workload: "membership bringing \(Self.movedRows) rows", scopedMilliseconds: moved.0,
                referenceMilliseconds: moved.1, target: 2.0),
        ]
    }

    static func milliseconds(_ body: () throws -> Void) throws -> Double {
        let started = ContinuousClock.now
        try body()
        let elapsed = ContinuousClock.now - started
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }
}

/// The service as a device reaches it, in this process: pushes and paged pulls with the tokens of
/// the bench.
private struct BenchServer {
    /// By dataset.
    let services: [String: SyncService]
    var tokens: [String: String] = [:]
    private var sequences: [UInt8: Int64] = [:]
    private var clock: Int64 = 1_764_000_000_000

    init(services: [String: SyncService]) { self.services = services }

    static func site(_ number: UInt8) -> SiteID { SiteID(bytes: Data(repeating: number, count: 16))! }

    mutating func insert(_ table: String, _ values: [String: WireValue], site: UInt8) -> Change {
        sequences[site, default: 0] += 1
        clock += 1
        let keyColumns = ScopeWorkloads.definition.tables.first { $0.name == table }!.columns.filter {
            $0.primaryKeyPosition > 0
        }.map(\.name)
        return Change(
            table: table, key: values.filter { keyColumns.contains($0.key) }, op: .insert, columns: values,
            clock: ChangeClock(milliseconds: clock, counter: 0)!, site: Self.site(site), seq: sequences[site]!)
    }

    mutating func reminder(_ id: String, list: String, site: UInt8) -> Change {
        insert(
            "reminders",
            ["id": .text(id), "listID": .text(list), "title": .text("Reminder \(id)"), "isDone": .integer(0)],
            site: site)
    }

    private func post(_ endpoint: String, _ token: String, _ dataset: String, _ body: Data) throws -> Data {
        var headers = HTTPHeaders()
        headers.add(name: "Authorization", value: "Bearer \(token)")
        headers.add(name: "Content-Type", value: "application/json")
        let response = services[dataset]!.handle(
            HTTPRequest(method: "POST", path: "/v1/datasets/\(dataset)/\(endpoint)", headers: headers, body: body))
        guard response.status.rawValue == 200 else {
            throw BenchmarkFailure(
                description: "\(endpoint) to \(dataset) answered \(response.status.rawValue): "
                    + String(decoding: response.body.prefix(300), as: UTF8.self))
        }
        return response.body
    }

    func push(_ changes: [Change], as token: String, dataset: String, site: UInt8) throws {
        try post(push: try pushBody(changes, site: site), as: token, dataset: dataset)
    }

    /// A push request of `changes` as `site`, encoded.
    func pushBody(_ changes: [Change], site: UInt8) throws -> Data {
        try ProtocolJSON.encode(
            PushRequest(
                protocolVersion: ProtocolVersion.current, schemaVersion: SchemaVersion(1, 0), site: Self.site(site),
                changes: changes))
    }

    func post(push body: Data, as token: String, dataset: String) throws {
        _ = try post("push", tokens[token]!, dataset, body)
    }

    /// Pulls every page after `cursor`; returns the cursor of the last.
    func download(as token: String, dataset: String, after cursor: String?) throws -> String {
        try pages(as: token, dataset: dataset, after: cursor).cursor
    }

    /// Pulls every page after `cursor`; returns how many changes they held.
    func downloadCounting(as token: String, dataset: String, after cursor: String?) throws -> Int {
        try pages(as: token, dataset: dataset, after: cursor).changes
    }

    private func pages(as token: String, dataset: String, after cursor: String?) throws -> (
        cursor: String, changes: Int
    ) {
        var cursor = cursor
        var changes = 0
        while true {
            let body = try ProtocolJSON.encode(
                PullRequest(
                    protocolVersion: ProtocolVersion.current, schemaVersion: SchemaVersion(1, 0),
                    site: Self.site(0x70), cursor: cursor, limit: ScopeWorkloads.pageLimit))
            let page = try ProtocolJSON.decode(
                PullResponse.self, from: try post("pull", tokens[token]!, dataset, body), limits: .standard)
            changes += page.changes.count
            cursor = page.cursor
            if !page.hasMore { return (page.cursor, changes) }
        }
    }
}
