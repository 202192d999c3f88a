import Foundation
import OfflineStore
import SyncClient

/// What one sync did in a `sync-client` child process.
struct SyncClientReport: Codable {
    var pushed: Int
    var pulled: Int
    /// Opening the store (attaching the metadatabase, the migrator's check, the triggers).
    var openMilliseconds: Double
    /// `SyncEngine.sync()`, from the hello to the saved cursor.
    var syncMilliseconds: Double
    /// Of that, the time spent inside requests (see ``MeteredTransport``); the engine works on the
    /// store meanwhile, so this is not the time the client was idle.
    var waitedMilliseconds: Double
    /// CPU time (user + system, every thread) the client process used during the sync.
    var cpuMilliseconds: Double
    var exchanges: [MeteredTransport.Exchange]
    /// The child's peak resident memory (`VmHWM`) over its whole life.
    var peakBytes: Int
}

/// One sync of one store, as an app runs it, in a child process of this executable: the time of
/// each part and the process's own peak memory, which the server's memory (another process) and
/// the benchmark's own (the parent) cannot inflate.
enum SyncClientRun {
    /// The hidden `ostore-bench` subcommand the child runs: `sync-client STORE SERVER-URL DATASET
    /// SCHEMA` (a ``FirstSyncSchema``), the token in the environment so it is not in the process list.
    static let subcommand = "sync-client"
    static let tokenVariable = "OSTORE_BENCH_TOKEN"
    /// A command the child runs under, words split on spaces (a profiler); its figures are then
    /// the profiler's, not the client's.
    static let wrapperVariable = "OSTORE_BENCH_CLIENT_WRAPPER"
    /// The child's `SyncEngine.Configuration.pushesInFlight`, when the bench was given one.
    static let pushesInFlightVariable = "OSTORE_BENCH_PUSHES_IN_FLIGHT"

    /// In the parent: runs one sync of the store at `path` with `server` in a child process.
    /// `root`: where the client sends its requests instead of the server's own address (a relay).
    static func measure(
        storeAt path: String, server: ServerProcess, schema: FirstSyncSchema = .todos, root: URL? = nil,
        pushesInFlight: Int? = nil
    ) throws -> SyncClientReport {
        var environment = ProcessInfo.processInfo.environment
        environment[tokenVariable] = server.token
        environment[pushesInFlightVariable] = pushesInFlight.map(String.init)
        // For profiling the client alone: OSTORE_BENCH_CLIENT_WRAPPER="valgrind --tool=callgrind".
        return try ChildProcessReport.run(
            [subcommand, path, (root ?? server.rootURL).absoluteString, ServerProcess.dataset, schema.planName],
            environment: environment,
            wrapper: environment[wrapperVariable], what: "the sync client")
    }

    /// In the child: opens the store, syncs it once, and prints the report as JSON on standard output.
    static func runInChild(_ arguments: [String]) throws {
        guard arguments.count == 4, let server = URL(string: arguments[1]),
            let token = ProcessInfo.processInfo.environment[tokenVariable]
        else {
            throw BenchmarkFailure(
                description:
                    "usage: ostore-bench \(subcommand) STORE SERVER-URL DATASET SCHEMA, token in \(tokenVariable)")
        }
        let clock = ContinuousClock()
        let openStart = clock.now
        let db = try Database(path: arguments[0])
        let log = try ChangeLog.open(db, migrator: try FirstSyncSchema.migrator(named: arguments[3]))
        let openDuration = clock.now - openStart

        let transport = MeteredTransport(try HTTPClient())
        var configuration = SyncEngine.Configuration(server: server, dataset: arguments[2], token: token)
        if let pushes = ProcessInfo.processInfo.environment[pushesInFlightVariable].flatMap({ Int($0) }) {
            configuration.pushesInFlight = pushes
        }
        let engine = SyncEngine(db: db, log: log, transport: transport, configuration: configuration)
        let cpuStart = cpuMilliseconds()
        let syncStart = clock.now
        let report = try engine.sync()
        let syncDuration = clock.now - syncStart
        let cpu = cpuMilliseconds() - cpuStart
        let peak = try ProcessMemory.status().peak
        try db.close()

        let result = SyncClientReport(
            pushed: report.pushed, pulled: report.pulled, openMilliseconds: milliseconds(openDuration),
            syncMilliseconds: milliseconds(syncDuration), waitedMilliseconds: transport.waitedMilliseconds,
            cpuMilliseconds: cpu, exchanges: transport.recorded, peakBytes: peak)
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
    }

    /// User plus system CPU time of this process so far (`getrusage`), in milliseconds.
    private static func cpuMilliseconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func milliseconds(_ time: timeval) -> Double { Double(time.tv_sec) * 1000 + Double(time.tv_usec) / 1000 }
        return milliseconds(usage.ru_utime) + milliseconds(usage.ru_stime)
    }
}
