import CommandLineTool
import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import SyncProtocol
import Synchronization

/// `ostore-bench live`'s options.
struct LiveBenchOptions {
    /// Idle devices holding a live pull beside the measured one.
    var devices = 1_000
    /// Commits on device A whose arrival on device B is timed.
    var trials = 40
    /// Commits timed against today's polling daemon (each takes its 30 s interval); 0 skips them.
    var pollingSamples = 3
    var server: String?
    var json = false
}

/// What `ostore-bench live` measured.
struct LiveResult: Encodable {
    var devices: Int
    var trials: Int
    /// From A's commit (then its push) to B's applied change, with B's daemon holding a live pull.
    var latencyMilliseconds: [Double]
    var medianMilliseconds: Double
    var p99Milliseconds: Double
    /// The same with B's daemon polling at its default interval, live pulls off.
    var pollingMedianMilliseconds: Double?
    var pollingSamples: [Double]
    /// The server's resident memory before the idle devices connected, and with all of them waiting.
    var serverResidentBeforeBytes: Int
    var serverResidentWaitingBytes: Int
    /// The server's CPU while every device waits and nothing changes, in percent of one core.
    var idleCPUPercent: Double
    var failedRequests: Int

    var waitersBytes: Int { serverResidentWaitingBytes - serverResidentBeforeBytes }
    var met: Bool {
        medianMilliseconds < 50 && p99Milliseconds < 250 && waitersBytes < 64 << 20 && idleCPUPercent < 2
    }

    func table() -> String {
        func ms(_ value: Double) -> String { String(format: "%.1f ms", value) }
        var lines = [
            "live sync: \(devices) idle devices waiting on one server (SQLite), \(trials) commits on A timed to B",
            "  A's commit to B's applied change   median \(ms(medianMilliseconds))   p99 \(ms(p99Milliseconds))"
                + "   (targets: under 50 ms and 250 ms)",
        ]
        if let polling = pollingMedianMilliseconds {
            lines.append(
                "  today's polling daemon (30 s)      median \(ms(polling)) over \(pollingSamples.count) commits")
        }
        lines += [
            String(
                format:
                    "  server memory for the waiters      %.1f MB (%.1f MB before, %.1f MB with all waiting; target under 64 MB)",
                Double(waitersBytes) / 1_048_576, Double(serverResidentBeforeBytes) / 1_048_576,
                Double(serverResidentWaitingBytes) / 1_048_576),
            String(format: "  server CPU while all wait idle     %.2f%% of a core (target under 2%%)", idleCPUPercent),
            "  requests without a proper answer   \(failedRequests)",
            "  targets met: \(met ? "yes" : "no")",
        ]
        return lines.joined(separator: "\n")
    }

    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    enum CodingKeys: String, CodingKey {
        case devices, trials
        case medianMilliseconds = "median_ms"
        case p99Milliseconds = "p99_ms"
        case
            pollingMedianMilliseconds = "polling_median_ms"
        case pollingSamples = "polling_samples_ms"
        case
            serverResidentBeforeBytes = "server_rss_before_bytes"
        case
            serverResidentWaitingBytes = "server_rss_waiting_bytes"
        case idleCPUPercent = "idle_cpu_percent"
        case
            failedRequests = "failed_requests"
        case latencyMilliseconds = "latency_ms"
    }
}

/// `ostore-bench live`: one `ostore-server` (the release build beside this one) with `devices`
/// idle devices holding live pulls (``IdleWaiters``), device B's `SyncDaemon` keeping one open
/// too, and device A committing a row and pushing it; each trial times A's commit to B's report
/// of the applied change. Then B again with today's polling daemon, for comparison.
struct LiveWorkloads {
    let options: LiveBenchOptions

    func run() throws -> LiveResult {
        guard FileDescriptorLimit.raise(toAtLeast: options.devices + 256) else {
            throw BenchmarkFailure(description: "cannot open \(options.devices + 256) files (RLIMIT_NOFILE)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ostore-bench-live-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let room = String(options.devices + 64)
        let server = try ServerProcess(
            executable: try ServerProcess.executable(options.server), directory: directory, threads: 4,
            arguments: [
                "--max-pull-wait", "60", "--max-waiting-pulls", room, "--max-waiting-pulls-per-ip", room,
                "--max-connections-per-ip", room,
            ])
        defer { server.stop() }

        let alice = try Device(path: directory.appendingPathComponent("alice.sqlite").path, server: server)
        try alice.commit()
        let cursor = try caughtUpCursor(server, schemaVersion: alice.schemaVersion)
        let before = server.residentBytes()
        let idle = IdleWaiters(
            port: server.port, token: server.token, cursor: cursor, schemaVersion: alice.schemaVersion,
            count: options.devices)
        idle.start()
        defer { idle.stop() }
        try waitFor("the idle devices to wait") { idle.waiting == options.devices }

        let bob = try LiveDaemon(path: directory.appendingPathComponent("bob.sqlite").path, server: server, live: true)
        defer { bob.stop() }
        try waitFor("B's first sync") { bob.applied.count >= 1 }
        try waitFor("every pull to wait") { (try? waitingPulls(server)) == options.devices + 1 }
        Thread.sleep(forTimeInterval: 1)
        let waitingResident = server.residentBytes()
        let cpuBefore = server.cpuSeconds()
        let idleStarted = ContinuousClock.now
        Thread.sleep(forTimeInterval: 5)
        let idleCPU = (server.cpuSeconds() - cpuBefore) / (ContinuousClock.now - idleStarted).seconds * 100

        var latencies: [Double] = []
        for _ in 0..<options.trials {
            try waitFor("every device to wait again") {
                idle.waiting == options.devices && (try? waitingPulls(server)) == options.devices + 1
            }
            let seen = bob.applied.count
            let committed = ContinuousClock.now
            try alice.commit()
            try waitFor("B to apply A's change") { bob.applied.count > seen }
            latencies.append((bob.applied.times[seen] - committed).milliseconds)
        }
        let failed = idle.failed
        bob.stop()

        var polling: [Double] = []
        if options.pollingSamples > 0 {
            let carol = try LiveDaemon(
                path: directory.appendingPathComponent("carol.sqlite").path, server: server, live: false)
            defer { carol.stop() }
            try waitFor("the polling daemon's first sync") { carol.syncs.count >= 1 }
            for _ in 0..<options.pollingSamples {
                // A commit at a uniformly random moment of the daemon's interval.
                let lastSync = carol.syncs.times.last!
                let offset = Double.random(in: 0..<SyncDaemon.Configuration().interval)
                let at = lastSync + .milliseconds(Int(offset * 1000))
                if at > .now { Thread.sleep(forTimeInterval: (at - .now).seconds) }
                let seen = carol.applied.count
                let committed = ContinuousClock.now
                try alice.commit()
                try waitFor("the polling daemon to apply A's change", timeout: .seconds(90)) {
                    carol.applied.count > seen
                }
                polling.append((carol.applied.times[seen] - committed).milliseconds)
            }
        }
        let sorted = latencies.sorted()
        return LiveResult(
            devices: options.devices, trials: options.trials, latencyMilliseconds: latencies,
            medianMilliseconds: Self.percentile(sorted, 0.5), p99Milliseconds: Self.percentile(sorted, 0.99),
            pollingMedianMilliseconds: polling.isEmpty ? nil : Self.percentile(polling.sorted(), 0.5),
            pollingSamples: polling, serverResidentBeforeBytes: before, serverResidentWaitingBytes: waitingResident,
            idleCPUPercent: idleCPU, failedRequests: failed)
    }

    static func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded(.up)))]
    }

    /// A cursor at the end of the dataset's log, pulled as a fresh device would.
    private func caughtUpCursor(_ server: ServerProcess, schemaVersion: String) throws -> String {
        let client = try HTTPClient()
        var cursor: String?
        let site = SiteID(bytes: Data((0..<16).map { _ in UInt8.random(in: 0...255) }))!
        while true {
            let request = PullRequest(
                protocolVersion: 3, schemaVersion: SchemaVersion(schemaVersion)!, site: site, cursor: cursor)
            let response = try client.send(
                HTTPClientRequest(
                    method: .post, url: server.baseURL.appendingPathComponent("pull"),
                    headers: ["Authorization": "Bearer \(server.token)", "Content-Type": "application/json"],
                    body: try ProtocolJSON.encode(request)))
            let page = try JSONDecoder().decode(PullResponse.self, from: response.body)
            cursor = page.cursor
            if !page.hasMore { return page.cursor }
        }
    }

    /// `ostore_waiting_pulls` of the server's `/metrics`.
    private func waitingPulls(_ server: ServerProcess) throws -> Int {
        let response = try HTTPClient().send(HTTPClientRequest(url: server.rootURL.appendingPathComponent("metrics")))
        let line = String(decoding: response.body, as: UTF8.self).split(separator: "\n").first {
            $0.hasPrefix("ostore_waiting_pulls ")
        }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }

    private func waitFor(_ what: String, timeout: Duration = .seconds(60), _ condition: () -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                throw BenchmarkFailure(description: "timed out waiting for \(what)")
            }
            usleep(200)
        }
    }
}

/// Device A: a Reminders store whose every commit is pushed at once.
private struct Device {
    let db: Database
    let engine: SyncEngine
    let schemaVersion: String

    init(path: String, server: ServerProcess) throws {
        db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        schemaVersion = log.schema.version?.description ?? "0.0.0"
        engine = SyncEngine(
            db: db, log: log, transport: try HTTPClient(),
            configuration: .init(server: server.rootURL, dataset: ServerProcess.dataset, token: server.token))
    }

    func commit() throws {
        let id = UUID().uuidString
        try db.execute("INSERT INTO remindersLists (id, name) VALUES (\(id), \(id))")
        try engine.sync()
    }
}

/// Moments at which something happened, recorded from another thread.
final class Moments: Sendable {
    private let recorded = Mutex<[ContinuousClock.Instant]>([])
    var count: Int { recorded.withLock { $0.count } }
    var times: [ContinuousClock.Instant] { recorded.withLock { $0 } }
    func record() { recorded.withLock { $0.append(.now) } }
}

/// Device B: a Reminders store with its `SyncDaemon` on a thread of its own, live or polling at
/// the default interval; it records when each sync applied something.
private final class LiveDaemon: Sendable {
    let applied = Moments()
    let syncs = Moments()
    private let isStopping = StopFlag()
    private let ended = DispatchSemaphore(value: 0)

    /// Set once to stop the daemon.
    final class StopFlag: Sendable {
        private let flag = Atomic<Bool>(false)
        var isRaised: Bool { flag.load(ordering: .relaxed) }
        /// Whether this call raised it.
        func raise() -> Bool { !flag.exchange(true, ordering: .relaxed) }
    }

    init(path: String, server: ServerProcess, live: Bool) throws {
        let (applied, syncs, isStopping, ended) = (applied, syncs, isStopping, ended)
        let url = server.rootURL
        let token = server.token
        Thread {
            defer { ended.signal() }
            guard let db = try? Database(path: path),
                let log = try? ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self)),
                let transport = try? HTTPClient()
            else { return }
            var configuration = SyncEngine.Configuration(server: url, dataset: ServerProcess.dataset, token: token)
            configuration.retry.maximumAttempts = 1
            let engine = SyncEngine(db: db, log: log, transport: transport, configuration: configuration)
            var daemon = SyncDaemon.Configuration()
            daemon.live = live
            // A check for the stop request at least this often.
            daemon.pollInterval = 0.05
            SyncDaemon(engine: engine, db: db, log: log, configuration: daemon).run(
                until: { isStopping.isRaised },
                report: { status in
                    if let error = status.lastError {
                        FileHandle.standardError.write(Data("ostore-bench live: a sync of B failed: \(error)\n".utf8))
                    }
                    syncs.record()
                    if (status.lastReport?.pulled ?? 0) > 0 { applied.record() }
                })
        }.start()
    }

    func stop() {
        guard isStopping.raise() else { return }
        ended.wait()
    }
}

extension Duration {
    fileprivate var milliseconds: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
    fileprivate var seconds: Double { milliseconds / 1000 }
}
