import Foundation
import PostgresScratchCluster
import SyncClient
import SyncProtocol
import Synchronization

/// What `ostore-bench server` is asked to do.
struct ServerBenchOptions {
    /// `sqlite` (the embedded storage) or `postgres` (a throwaway cluster the benchmark starts).
    var backend = "sqlite"
    /// Server processes sharing the storage, clients spread over them round-robin (PostgreSQL).
    var servers = [1]
    /// Changes pushed per configuration, split evenly among its clients.
    var changes = 100_000
    var clients = [1, 4, 16]
    /// Changes per push request.
    var batch = 1_000
    /// Changes asked for per pull request (the server caps it at its `maxChangesPerPull`).
    var pullLimit = 1_000
    /// `ostore-server serve --threads`.
    var serverThreads = 4
    /// An `ostore-server` executable other than the one beside `ostore-bench`.
    var server: String?
    var json = false
}

/// `ostore-bench server`: real `ostore-server` processes, and for each server and client count
/// fresh storage (a data directory, or a database on a throwaway PostgreSQL cluster) and servers,
/// then
///
/// 1. **push**: each client (a thread with its own `HTTPClient`, so its own kept-alive
///    connection, and its own site id) says hello, then pushes its share of the changes in batches;
///    the clock runs from the moment all clients are released until the last acknowledgement;
/// 2. **pull**: each client pulls everything from a fresh cursor (the snapshot of every row, then
///    the empty log) in pages of `pullLimit`, all clients at once.
///
/// Every change is an insert of one row of `items (id TEXT UUID, title TEXT, done INTEGER,
/// position REAL)`. Push bodies are encoded before the clock starts and pull pages are decoded only
/// as far as their cursor and change count, so the two cores this runs on go to the server, not to
/// the clients' JSON. Every acknowledgement and every page count is checked.
struct ServerWorkloads {
    let options: ServerBenchOptions

    /// The target: pushes with 4 clients at this rate or better.
    static let pushTarget = 50_000.0
    static let targetClients = 4

    /// PostgreSQL as it would serve: durable (fsync, full-page writes) but, like the SQLite
    /// backend's WAL at `synchronous = NORMAL`, not waiting for a flush at each commit.
    static let postgresSettings = [
        "synchronous_commit": "off", "shared_buffers": "256MB", "max_connections": "200",
    ]

    func run() throws -> [ServerResult] {
        guard ["sqlite", "postgres"].contains(options.backend) else {
            throw BenchmarkFailure(description: "no backend \(options.backend); use --backend sqlite or postgres")
        }
        guard options.backend == "postgres" || options.servers == [1] else {
            throw BenchmarkFailure(description: "several servers share a PostgreSQL database; use --backend postgres")
        }
        let executable = try ServerProcess.executable(options.server)
        let cluster = options.backend == "postgres" ? try PostgresCluster(settings: Self.postgresSettings) : nil
        return try options.servers.flatMap { servers in
            try options.clients.map { clients in
                try run(servers: servers, clients: clients, executable: executable, cluster: cluster)
            }
        }
    }

    private func run(servers serverCount: Int, clients: Int, executable: URL, cluster: PostgresCluster?) throws
        -> ServerResult
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "ostore-bench-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage =
            try cluster.map { BenchStorage.postgres(try $0.createDatabase()) }
            ?? .sqlite(directory.appendingPathComponent("data"))
        let token = try storage.makeDataset()
        let servers = try (0..<serverCount).map { index in
            try ServerProcess(
                executable: executable, directory: directory, name: "server\(index)", storage: storage, token: token,
                threads: options.serverThreads)
        }
        defer { for server in servers { server.stop() } }

        let peers = try (0..<clients).map { index in
            try BenchPeer(
                server: servers[index % serverCount],
                changes: options.changes / clients + (index < options.changes % clients ? 1 : 0), batch: options.batch)
        }
        for peer in peers { try peer.hello() }

        // The servers' CPU time; PostgreSQL's own is not counted.
        func serverCPU() -> Double { servers.map { $0.cpuSeconds() }.reduce(0, +) }
        func serverDiskWrites() -> Int { servers.map { $0.diskWrittenBytes() }.reduce(0, +) }
        let pushCPU = serverCPU()
        let pushWrites = serverDiskWrites()
        let push = try runConcurrently(peers) { peer in try peer.pushAll() }
        let pullCPU = serverCPU()
        let pullWrites = serverDiskWrites()
        let pull = try runConcurrently(peers) { peer in try peer.pullAll(limit: options.pullLimit) }
        let endCPU = serverCPU()
        let endWrites = serverDiskWrites()
        let peak = servers.map { $0.peakResidentBytes() }.max() ?? 0
        for server in servers { server.stop() }

        for (peer, pulled) in zip(peers, pull.counts) where pulled != options.changes {
            throw BenchmarkFailure(
                description: "site \(peer.site) pulled \(pulled) changes; the dataset holds \(options.changes) rows")
        }
        return ServerResult(
            backend: options.backend, servers: serverCount, clients: clients, batch: options.batch,
            pushed: push.counts.reduce(0, +),
            push: Phase(push, serverCPUSeconds: pullCPU - pushCPU, serverDiskWrittenBytes: pullWrites - pushWrites),
            pulled: pull.counts.reduce(0, +),
            pull: Phase(pull, serverCPUSeconds: endCPU - pullCPU, serverDiskWrittenBytes: endWrites - pullWrites),
            serverPeakBytes: peak,
            met: clients == Self.targetClients
                ? Double(push.counts.reduce(0, +)) / push.seconds >= Self.pushTarget : nil)
    }

    /// What the clients of one phase did together.
    struct Outcome {
        /// Changes per client, in client order.
        var counts: [Int]
        /// Every request's latency in milliseconds.
        var latencies: [Double]
        /// From the clients' release to the last one's end.
        var seconds: Double
    }

    /// Runs `work` for every peer at once, each on a thread of its own, from one starting gun.
    private func runConcurrently(_ peers: [BenchPeer], _ work: @escaping @Sendable (BenchPeer) throws -> PeerRun)
        throws -> Outcome
    {
        let results = Mutex<[Int: Result<PeerRun, any Error>]>([:])
        let start = DispatchSemaphore(value: 0)
        let ready = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for (index, peer) in peers.enumerated() {
            done.enter()
            let thread = Thread {
                ready.signal()
                start.wait()
                let result = Result { try work(peer) }
                results.withLock { $0[index] = result }
                done.leave()
            }
            thread.start()
        }
        for _ in peers { ready.wait() }
        let began = DispatchTime.now().uptimeNanoseconds
        for _ in peers { start.signal() }
        done.wait()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
        let runs = try results.withLock { results in try peers.indices.map { try results[$0]!.get() } }
        return Outcome(counts: runs.map(\.changes), latencies: runs.flatMap(\.latencies), seconds: seconds)
    }
}

/// One client's share of a phase: how many changes it moved and each request's latency (ms).
struct PeerRun: Sendable {
    var changes = 0
    var latencies: [Double] = []
}

/// One benchmark client: a site with its own `HTTPClient` (one kept-alive connection), its push
/// bodies encoded up front.
final class BenchPeer: Sendable {
    let client: HTTPClient
    let site: SiteID
    let token: String
    let base: URL
    /// With a definition, as clients send it, so every pushed change is checked against it
    /// (Protocol/README.md, section 5.2).
    let schema: SchemaDescription = {
        let definition = SchemaDefinition(tables: [
            .init(
                name: "items", isStrict: true,
                columns: [
                    .init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1),
                    .init(name: "title", type: "TEXT", isNotNull: true),
                    .init(name: "done", type: "INTEGER", isNotNull: true, defaultValue: .value(.integer(0))),
                    .init(name: "position", type: "REAL"),
                ])
        ])
        return SchemaDescription(
            version: SchemaVersion(1, 0), fingerprint: definition.fingerprint,
            tables: ["items": ["id", "title", "done", "position"]], definition: definition)
    }()
    /// Push request bodies, one per batch, and the last `seq` of each.
    let batches: [(body: Data, lastSeq: Int64, count: Int)]

    init(server: ServerProcess, changes: Int, batch: Int) throws {
        client = try HTTPClient()
        site = SiteID(bytes: Data((0..<16).map { _ in UInt8.random(in: 0...255) }))!
        token = server.token
        base = server.baseURL
        let start = Int64(Date().timeIntervalSince1970 * 1000)
        var batches: [(Data, Int64, Int)] = []
        var seq: Int64 = 0
        while seq < changes {
            var batchChanges: [Change] = []
            while batchChanges.count < batch && seq < changes {
                seq += 1
                let id = UUID().uuidString.lowercased()
                batchChanges.append(
                    Change(
                        table: "items", key: ["id": .text(id)], op: .insert,
                        columns: [
                            "id": .text(id), "title": .text("item \(seq) of site"), "done": .integer(seq % 2),
                            "position": .real(Double(seq) / 7),
                        ],
                        clock: ChangeClock(validMilliseconds: start + seq >> 16, counter: seq & 0xFFFF), site: site,
                        seq: seq))
            }
            let request = PushRequest(
                protocolVersion: 1, schemaVersion: schema.version, site: site, changes: batchChanges)
            batches.append((try ProtocolJSON.encode(request), seq, batchChanges.count))
        }
        self.batches = batches
    }

    private func post(_ endpoint: String, _ body: Data) throws -> HTTPClientResponse {
        let response = try client.send(
            HTTPClientRequest(
                method: .post, url: base.appendingPathComponent(endpoint),
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"], body: body))
        guard response.status == 200 else {
            throw BenchmarkFailure(
                description:
                    "\(endpoint) answered \(response.status): \(String(decoding: response.body.prefix(300), as: UTF8.self))"
            )
        }
        return response
    }

    func hello() throws {
        let answer = try JSONDecoder().decode(
            HelloResponse.self,
            from: try post("hello", try ProtocolJSON.encode(HelloRequest(site: site, schema: schema))).body)
        guard answer.verdict == .compatible else {
            throw BenchmarkFailure(description: "hello answered \(answer.verdict): \(answer.message)")
        }
    }

    func pushAll() throws -> PeerRun {
        var run = PeerRun()
        for batch in batches {
            let started = DispatchTime.now().uptimeNanoseconds
            let response = try post("push", batch.body)
            run.latencies.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
            let answer = try JSONDecoder().decode(PushResponse.self, from: response.body)
            guard answer.acknowledgedThrough == batch.lastSeq else {
                throw BenchmarkFailure(
                    description: "push acknowledged \(answer.acknowledgedThrough), expected \(batch.lastSeq)")
            }
            run.changes += batch.count
        }
        return run
    }

    func pullAll(limit: Int) throws -> PeerRun {
        var run = PeerRun()
        var cursor: String?
        while true {
            let body = try ProtocolJSON.encode(
                PullRequest(protocolVersion: 1, schemaVersion: schema.version, site: site, cursor: cursor, limit: limit)
            )
            let started = DispatchTime.now().uptimeNanoseconds
            let response = try post("pull", body)
            run.latencies.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
            let page = try JSONDecoder().decode(PageSummary.self, from: response.body)
            run.changes += page.changes.count
            cursor = page.cursor
            if !page.hasMore { return run }
        }
    }

    /// A pull page read only as far as the benchmark needs: its cursor, whether more follows, and
    /// how many changes it holds (each change is skipped, not decoded).
    private struct PageSummary: Decodable {
        struct Skipped: Decodable {
            init(from decoder: any Decoder) throws {}
        }

        let changes: [Skipped]
        let cursor: String
        let hasMore: Bool
    }
}
