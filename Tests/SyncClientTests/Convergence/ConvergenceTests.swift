import Foundation
import TestSupport
import Testing

/// Random offline work on 3–4 devices, synced in a random order through a proxy that resets,
/// stalls, truncates and replays requests at random, against a real `ostore-server`: every seed
/// must end with identical devices equal to the merge model.
///
/// 20 seeds by default, and the seeds that once failed a test (``regressionSeeds``);
/// `OSTORE_CONVERGENCE_SEEDS=500` runs 500, `OSTORE_CONVERGENCE_SEED=N` replays seed N alone (a
/// failure prints its seed), and `OSTORE_CONVERGENCE_FIRST_SEED=N` starts the run at seed N
/// instead of 1, to search seeds no earlier run tried.
@Suite("Randomised convergence")
struct ConvergenceTests {
    /// The seeds a scenario runs: the environment's, or by default seeds 1–20 and its regression seeds.
    static func seeds(_ scenario: ConvergenceRun.Scenario) -> [UInt64] {
        let environment = ProcessInfo.processInfo.environment
        if let single = environment["OSTORE_CONVERGENCE_SEED"].flatMap(UInt64.init) { return [single] }
        let count = UInt64(max(1, environment["OSTORE_CONVERGENCE_SEEDS"].flatMap(Int.init) ?? 20))
        let first = max(1, environment["OSTORE_CONVERGENCE_FIRST_SEED"].flatMap(UInt64.init) ?? 1)
        let chosen =
            environment["OSTORE_CONVERGENCE_SEEDS"] != nil || environment["OSTORE_CONVERGENCE_FIRST_SEED"] != nil
        return (first...(first + count - 1)).map { $0 } + (chosen ? [] : regressionSeeds[scenario] ?? [])
    }

    /// Seeds that once failed, run by default with seeds 1–20, each with what it found.
    ///
    /// - 7837, the older major: a reminder a device had linked to a tag was moved by another device
    ///   to a list this one did not have yet, so it waited in the stash with its link; when both
    ///   came back in a sync, the log queued the device's own entry of the link again
    ///   (`ChangeLog.applyStash`), at a new place with the same clock, and a delete pulled later in
    ///   the same sync removed the link: the harness took the entry for a new write of a row that
    ///   was not there (``SyncPeer/capture()`` now skips an entry it read before).
    static let regressionSeeds: [ConvergenceRun.Scenario: [UInt64]] = [.olderMajorRelease: [7837]]

    @Test func randomOfflineWorkThroughFaultsConvergesToTheMergeModel() throws {
        try runSeeds(.newestRelease, replayFilter: "randomOfflineWorkThroughFaults")
    }

    /// Devices on Reminders 1.0 and 1.1 together, each 1.0 device upgrading to 1.1 at a random
    /// moment: what a 1.0 device could not hold waits in its stash and is filled in once it
    /// upgrades, and nothing it writes meanwhile clobbers what it does not know.
    @Test func olderReleasesConvergeThroughFaultsOnceTheyUpgrade() throws {
        try runSeeds(.olderMinorReleases, replayFilter: "olderReleasesConverge")
    }

    /// The system purges a device's database or metadatabase now and then: what the device had
    /// not pushed is lost by design, and every device must still end with what the server stored,
    /// merged.
    @Test func devicesWithPurgedFilesConvergeToWhatTheServerStored() throws {
        try runSeeds(.purgedFiles, replayFilter: "devicesWithPurgedFiles")
    }

    /// Devices on Reminders 1.0 and 1.1 while others move the dataset to 2.0: refused until they
    /// upgrade, they keep working offline, and once upgraded their queues go out, their stashes fill
    /// in what they did not know, their due dates reach 2.0 as `dueAt`, and every device ends the same.
    @Test func devicesOnAnOlderMajorConvergeOnceTheyUpgrade() throws {
        try runSeeds(.olderMajorRelease, replayFilter: "devicesOnAnOlderMajor")
    }

    /// Half of the syncs run in a child process that kills itself at a random write on the store's
    /// connection (mid-push, mid-apply, at a commit): each device opens its files as the kill left
    /// them and carries on, and every seed must still converge with nothing lost or stored twice.
    @Test func devicesWhoseSyncsAreKilledConvergeToTheMergeModel() throws {
        try runSeeds(.killedSyncs, replayFilter: "devicesWhoseSyncsAreKilled")
    }

    /// The two above together: older devices' syncs run half of the time as the 2.0 app in a child
    /// process killed at a random write, whose open upgrades them, so kills land in the migration.
    @Test func majorUpgradesInKilledSyncsConvergeOnceTheDevicesCarryOn() throws {
        try runSeeds(.killedSyncsThroughTheMajorUpgrade, replayFilter: "majorUpgradesInKilledSyncs")
    }

    /// Syncs in a child process beside the app, which keeps its store open and goes on writing (and
    /// syncing): the app and its daemon. Half of those children are killed at a random write.
    @Test func syncsBesideTheAppConvergeToTheMergeModel() throws {
        try runSeeds(.syncsBesideTheApp, replayFilter: "syncsBesideTheApp")
    }

    /// Runs every seed of `scenario`; a failure names the filter that replays it.
    private func runSeeds(_ scenario: ConvergenceRun.Scenario, replayFilter test: String) throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
        let proxy = try FaultProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        var totals = ConvergenceRun.Outcome()
        let seeds = Self.seeds(scenario)
        for seed in seeds {
            let replay = "replay: OSTORE_CONVERGENCE_SEED=\(seed) swift test --filter \(test)"
            let outcome: ConvergenceRun.Outcome
            do {
                outcome = try ConvergenceRun(
                    seed: seed, directory: directory, server: server, proxy: proxy, scenario: scenario
                ).execute()
            } catch {
                Issue.record(Comment(rawValue: "seed \(seed) failed: \(error)\n\(replay)"))
                continue
            }
            if !outcome.problems.isEmpty {
                let message = "seed \(seed) did not converge\n\(replay)\n" + outcome.problems.joined(separator: "\n")
                Issue.record(Comment(rawValue: message))
            }
            totals.add(outcome)
        }
        let faults = proxy.counts.filter { $0.key != .pass }.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
        var summary =
            "convergence: \(seeds.count) seeds, \(totals.operations) offline operations, "
            + "\(totals.events) logged changes, \(totals.syncs) syncs under faults (\(totals.failedSyncs) gave up), "
            + "\(proxy.requestCount) requests; faults: \(faults)"
        if scenario == .olderMinorReleases {
            summary +=
                "; devices on releases 1.0 and 1.1, 1.0 upgraded \(totals.upgradesMidway) times midway and "
                + "\(totals.upgradesAtEnd) at the end, with \(totals.stashedAtUpgrade) changes waiting in their stashes"
        }
        if scenario == .purgedFiles {
            summary +=
                "; \(totals.databasesPurged) databases and \(totals.metadatabasesPurged) metadatabases purged, "
                + "\(totals.deletesQueuedAtPurge) queued deletes kept through database purges"
        }
        if scenario.movesToTheNextMajor {
            summary +=
                "; devices on releases 1.0, 1.1 and 2.0, the older refused \(totals.refusedForUpgrade) times, upgraded "
                + "\(totals.upgradesMidway) times midway and \(totals.upgradesAtEnd) at the end, with "
                + "\(totals.queuedAtMajorUpgrade) changes queued and \(totals.stashedAtUpgrade) stashed"
        }
        if scenario == .syncsBesideTheApp {
            summary +=
                "; \(totals.childSyncsBesideTheApp) child syncs beside the app, \(totals.killedSyncs) of them killed at "
                + "a random write, \(totals.childSyncsEnded) ended by themselves; \(totals.operationsBesideAChild) "
                + "operations of the app while its child was started"
        }
        if scenario.killsSyncs {
            summary +=
                "; \(totals.killedSyncs) syncs killed at a random write, \(totals.childSyncsEnded) child syncs ended first"
            if scenario.movesToTheNextMajor {
                summary +=
                    ", \(totals.upgradedByAChild) devices upgraded by a child, "
                    + "\(totals.killedWhileUpgrading) children killed before the upgrade committed"
            }
        }
        print(summary)
        // The faults really happened: the run is not a quiet-network test.
        #expect(
            ProxyFault.allCases.filter { $0 != .pass }.allSatisfy { (proxy.counts[$0] ?? 0) > 0 }
                || seeds.count < 5)
        // And the older releases really met newer work: devices upgraded in the middle of the work,
        // with changes waiting for the newer schema.
        if scenario == .olderMinorReleases && seeds.count >= 5 {
            #expect(totals.upgradesMidway > 0 && totals.stashedAtUpgrade > 0)
        }
        if scenario == .purgedFiles && seeds.count >= 5 {
            #expect(totals.databasesPurged > 0 && totals.metadatabasesPurged > 0)
        }
        if (scenario.killsSyncs || scenario == .syncsBesideTheApp) && seeds.count >= 5 {
            #expect(totals.killedSyncs > 0 && totals.childSyncsEnded > 0)
        }
        if scenario == .killedSyncsThroughTheMajorUpgrade && seeds.count >= 5 {
            #expect(totals.upgradedByAChild > 0 && totals.killedWhileUpgrading > 0)
        }
        // Devices were refused as too old and upgraded with changes queued.
        if scenario == .olderMajorRelease && seeds.count >= 5 {
            #expect(totals.refusedForUpgrade > 0 && totals.upgradesMidway > 0 && totals.queuedAtMajorUpgrade > 0)
        }
    }
}
