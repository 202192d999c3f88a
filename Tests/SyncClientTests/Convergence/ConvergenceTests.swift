import Foundation
import TestSupport
import Testing

/// Random offline work on 3–4 devices, synced in a random order through a proxy that resets,
/// stalls, truncates and replays requests at random, against a real `ostore-server`: every seed
/// must end with identical devices equal to the merge model.
///
/// 20 seeds by default; `OSTORE_CONVERGENCE_SEEDS=500` runs 500, `OSTORE_CONVERGENCE_SEED=N`
/// replays seed N alone (a failure prints its seed).
@Suite("Randomised convergence")
struct ConvergenceTests {
    static var seeds: [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let single = environment["OSTORE_CONVERGENCE_SEED"].flatMap(UInt64.init) { return [single] }
        let count = environment["OSTORE_CONVERGENCE_SEEDS"].flatMap(Int.init) ?? 20
        return (1...UInt64(max(1, count))).map { $0 }
    }

    @Test func randomOfflineWorkThroughFaultsConvergesToTheMergeModel() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
        let proxy = try FaultProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        var totals = ConvergenceRun.Outcome()
        for seed in Self.seeds {
            let outcome: ConvergenceRun.Outcome
            do {
                outcome = try ConvergenceRun(seed: seed, directory: directory, server: server, proxy: proxy).execute()
            } catch {
                let message =
                    "seed \(seed) failed: \(error)\nreplay: OSTORE_CONVERGENCE_SEED=\(seed) swift test --filter Convergence"
                Issue.record(Comment(rawValue: message))
                continue
            }
            if !outcome.problems.isEmpty {
                let message =
                    "seed \(seed) did not converge\nreplay: OSTORE_CONVERGENCE_SEED=\(seed) swift test --filter Convergence\n"
                    + outcome.problems.joined(separator: "\n")
                Issue.record(Comment(rawValue: message))
            }
            totals.operations += outcome.operations
            totals.syncs += outcome.syncs
            totals.failedSyncs += outcome.failedSyncs
            totals.events += outcome.events
        }
        let faults = proxy.counts.filter { $0.key != .pass }.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
        print(
            "convergence: \(Self.seeds.count) seeds, \(totals.operations) offline operations, \(totals.events) logged "
                + "changes, \(totals.syncs) syncs under faults (\(totals.failedSyncs) gave up), "
                + "\(proxy.requestCount) requests; faults: \(faults)")
        // The faults really happened: the run is not a quiet-network test.
        #expect(
            ProxyFault.allCases.filter { $0 != .pass }.allSatisfy { (proxy.counts[$0] ?? 0) > 0 }
                || Self.seeds.count < 5)
    }
}
