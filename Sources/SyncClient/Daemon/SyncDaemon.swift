import Foundation
import OfflineStore

/// Keeps a store in sync: syncs at an interval, and shortly after a local commit (debounced, so
/// a burst of writes is one sync), backs off with jitter while the server cannot be reached, and
/// returns when asked to stop. Commits by other processes are seen through SQLite's
/// `PRAGMA data_version`, polled on the store's connection.
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
        /// Seconds between syncs when nothing happens.
        public var interval: Double = 30
        /// Seconds after a local commit before syncing (more commits meanwhile wait for the same sync).
        public var debounce: Double = 2
        /// Seconds between checks for commits and for the stop request.
        public var pollInterval: Double = 0.25
        public var retry = RetryPolicy(maximumAttempts: nil)

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

    /// Runs until `shouldStop` returns true (checked every poll interval), calling `report` after
    /// every sync attempt.
    public func run(until shouldStop: () -> Bool, report: (DaemonStatus) -> Void) {
        var nextSync = Date()
        var failures = 0
        var lastDataVersion = dataVersion()
        while !shouldStop() {
            let now = Date()
            if let version = dataVersion(), version != lastDataVersion {
                lastDataVersion = version
                nextSync = min(nextSync, now.addingTimeInterval(configuration.debounce))
            }
            if now >= nextSync {
                do {
                    let outcome = try engine.sync()
                    failures = 0
                    status.lastSyncAt = Date()
                    status.lastError = nil
                    status.lastReport = outcome
                    nextSync = Date().addingTimeInterval(configuration.interval)
                } catch {
                    failures += 1
                    status.lastError = error
                    // Retryable faults back off; a refusal that needs a change here (an upgrade)
                    // is checked again at the normal interval.
                    let wait =
                        error.isRetryable
                        ? configuration.retry.delay(afterAttempt: failures, retryAfter: error.retryAfterSeconds)
                        : configuration.interval
                    nextSync = Date().addingTimeInterval(wait)
                }
                // `lastDataVersion` is deliberately not read again here: the sync's own writes
                // never change this connection's data_version, and a commit another connection made
                // while the sync ran (after its push had read the queue) must still be seen as one.
                status.consecutiveFailures = failures
                status.pendingChanges = (try? log.pendingCount(db)) ?? status.pendingChanges
                status.nextSyncAt = nextSync
                report(status)
            }
            usleep(UInt32(configuration.pollInterval * 1_000_000))
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
    public var nextSyncAt: Date?

    public init() {}
}
