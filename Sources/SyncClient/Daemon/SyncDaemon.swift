import Foundation
import OfflineStore

/// Keeps a store in sync: while the store is idle it keeps one live pull open, so another device's
/// change arrives within milliseconds (``SyncEngine/sync(waitingForChanges:progress:)``); it syncs
/// shortly after a local commit (debounced, so a burst of writes is one sync), backs off with
/// jitter while the server cannot be reached, and returns when asked to stop. With a server that
/// does not hold pulls, or with ``Configuration/live`` off, it syncs at an interval instead.
/// Commits by other processes are seen through SQLite's `PRAGMA data_version`, polled on the
/// store's connection, during a live pull too.
///
/// Give it an engine whose retry policy makes one attempt (`maximumAttempts = 1`): the daemon
/// does the backing off itself, between whole syncs.
///
/// ```swift
/// let daemon = SyncDaemon(engine: engine, db: db, log: log)
/// daemon.run(until: { stopRequested.load(ordering: .relaxed) }) { status in print(status.summary) }
/// ```
///
/// See <https://www.sqlite.org/pragma.html#pragma_data_version>.
public final class SyncDaemon {
    public struct Configuration: Sendable {
        /// Seconds between syncs when nothing happens and no live pull is open.
        public var interval: Double = 30
        /// Seconds after a local commit before syncing (more commits meanwhile wait for the same sync).
        public var debounce: Double = 2
        /// Seconds between checks for commits and for the stop request.
        public var pollInterval: Double = 0.25
        public var retry = RetryPolicy(maximumAttempts: nil)
        /// Keep a live pull open while idle, with a server that holds pulls.
        public var live = true
        /// The longest each live pull waits at the server; below the transport's stall detection
        /// (``LiveWait``).
        public var liveWait: Duration = .seconds(20)

        public init() {}
    }

    let engine: SyncEngine
    let db: Database
    let log: ChangeLog
    public let configuration: Configuration
    public private(set) var status = DaemonStatus()

    public init(engine: SyncEngine, db: Database, log: ChangeLog, configuration: Configuration = Configuration()) {
        self.engine = engine
        self.db = db
        self.log = log
        self.configuration = configuration
    }

    /// Runs until `shouldStop` returns true (checked every poll interval, and during a live pull),
    /// calling `report` after every sync attempt.
    public func run(until shouldStop: () -> Bool, report: (DaemonStatus) -> Void) {
        // The live pull's `shouldStop` is asked only while `engine.sync` runs, inside this call.
        withoutActuallyEscaping(shouldStop) { shouldStop in run(shouldStop, report) }
    }

    private func run(_ shouldStop: @escaping () -> Bool, _ report: (DaemonStatus) -> Void) {
        var nextSync = Date()
        var failures = 0
        var lastDataVersion = dataVersion()
        // Whether the last sync's server holds pulls and took this device's last one.
        var waitsLive = false
        while !shouldStop() {
            let now = Date()
            if let version = dataVersion(), version != lastDataVersion {
                lastDataVersion = version
                nextSync = min(nextSync, now.addingTimeInterval(configuration.debounce))
            }
            let isDue = now >= nextSync
            guard isDue || (waitsLive && configuration.live) else {
                usleep(UInt32(configuration.pollInterval * 1_000_000))
                continue
            }
            let wait =
                isDue
                ? nil
                : LiveWait(timeout: configuration.liveWait, checkInterval: .seconds(configuration.pollInterval)) {
                    // A local commit ends the wait once its debounce has passed, so it is pushed.
                    if let version = self.dataVersion(), version != lastDataVersion {
                        lastDataVersion = version
                        nextSync = min(nextSync, Date().addingTimeInterval(self.configuration.debounce))
                    }
                    return Date() >= nextSync || shouldStop()
                }
            do {
                let outcome = try engine.sync(waitingForChanges: wait)
                failures = 0
                waitsLive = outcome.livePullsOffered && outcome.liveWait != .refused
                status.lastSyncAt = Date()
                status.lastError = nil
                status.lastReport = outcome
                if isDue || outcome.liveWait == .refused {
                    nextSync = Date().addingTimeInterval(configuration.interval)
                }
            } catch {
                failures += 1
                waitsLive = false
                status.lastError = error
                // Retryable faults back off; a refusal that needs a change here (an upgrade)
                // is checked again at the normal interval.
                let delay =
                    error.isRetryable
                    ? configuration.retry.delay(afterAttempt: failures, retryAfter: error.retryAfterSeconds)
                    : configuration.interval
                nextSync = Date().addingTimeInterval(delay)
            }
            // `lastDataVersion` is deliberately not read again here: the sync's own writes
            // never change this connection's data_version, and a commit another connection made
            // while the sync ran (after its push had read the queue) must still be seen as one.
            status.consecutiveFailures = failures
            status.pendingChanges = (try? log.pendingCount(db)) ?? status.pendingChanges
            status.nextSyncAt = waitsLive && configuration.live ? nil : nextSync
            status.isWaitingLive = waitsLive && configuration.live
            if wait == nil || status.lastReport?.pulled != 0 || status.lastError != nil {
                report(status)
            }
        }
    }

    private func dataVersion() -> Int? { try? db.fetchValue(Int.self, "PRAGMA data_version") }
}

/// What the daemon reports after each attempt.
public struct DaemonStatus: Sendable {
    public var lastSyncAt: Date?
    public var lastError: SyncError?
    public var lastReport: SyncReport?
    public var consecutiveFailures = 0
    public var pendingChanges = 0
    /// When the next sync starts; nil while a live pull waits for changes (the next sync is
    /// then when they come, or when a local commit's debounce passes).
    public var nextSyncAt: Date?
    /// Whether the daemon keeps a live pull open between syncs.
    public var isWaitingLive = false

    public init() {}
}
