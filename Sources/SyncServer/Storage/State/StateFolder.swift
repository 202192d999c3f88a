import Foundation
import OfflineStoreSQLite
import SyncProtocol
import Synchronization

/// Merges the log (in `server.sqlite`) into the current state (`state_rows`, in `state.sqlite`: see
/// ``ServerStateFile``) on a thread of its own, after the pushes that appended it have been
/// acknowledged. A push's transaction only appends
/// (the log, the site's `highSeq`, the dataset's `lastSerial`): with random-UUID keys each merged
/// change dirtied about two state pages of its own, which made a push about three times as costly
/// as the append alone. Here up to ``changesPerFold`` changes are merged per transaction, sorted
/// by (dataset, table, key) so neighbouring keys share pages, each row's record read and written
/// once per fold with its cells packed in it (``MergedRow``), and `foldedSerial` moves in the same
/// transaction, so a crash at any point leaves the state exactly the log up to `foldedSerial` and
/// the next start goes on from there.
///
/// It writes through the state file's writer, and reads the log through `server.sqlite`'s
/// readers: a fold never waits for a push's group commit nor holds one up (SQLite has one writer
/// per file; when the state shared the log's file, each fold held that writer for 0.1–0.3 s). A
/// fold's commit does not wait for an fsync: the state is rebuilt from the log.
///
/// Pushes hand their decoded changes over in memory (``handOver(_:datasetID:lastSerial:)``),
/// each push's as one ``Run`` in serial order, and a round waits ``gatheringTime`` after the first
/// of them for more (unless ``changesPerFold`` are in, or someone waits for the fold), so that
/// folds are large. A round folds what was handed over as far as it runs without a gap (a push
/// that committed but has not handed over yet waits for the next round); the log is read back
/// only when nothing at the start of the unfolded tail is in memory (after a restart, or pushes
/// through another connection to the same file). A push whose dataset has more than
/// ``maximumLag`` changes unfolded waits for the fold, which bounds both the memory held here and
/// how far the state trails the log.
///
/// ```swift
/// let folder = StateFolder(log: pool, state: stateFile.pool, foldedSerials: try stateFile.reconcile(with: pool))
/// folder.handOver(run, datasetID: id, lastSerial: serial)  // after commit
/// ```
final class StateFolder: Sendable {
    /// Keys are random, so a fold of n changes over a state of L leaves dirties about
    /// L·(1 − e^(−n/L)) of them: the larger the fold, the fewer pages written per change and the
    /// faster pushes go on a large state, for a longer p99 push and more memory held
    /// (docs/performance.md, "Server").
    static let changesPerFold = 40_000
    /// Two folds: a round starts once ``changesPerFold`` are handed over, and pushes go on
    /// appending the next ones while it runs beside them. With one fold, every push that comes
    /// after a round's changes are in would wait for that round. It bounds how far the state trails the
    /// log (so how much of a push phase's cost can land after it) and the changes held here.
    static let maximumLag: Int64 = 80_000
    /// How long a round waits, after a push handed changes over, for more to fold with them.
    static let gatheringTime: TimeInterval = 1.0

    private let state = State()

    /// Starts the thread, which first folds whatever the log holds beyond each dataset's
    /// `foldedSerial` (`foldedSerials`, 0 for a dataset not in it: what a crash or a stop left).
    /// With `running` false nothing is folded: the administration commands leave folding to the
    /// server so, and tests hold a data directory in the state a crash right after a push leaves.
    init(log: DatabasePool, state stateFile: DatabasePool, foldedSerials: [Int64: Int64], running: Bool = true) {
        state.folded = foldedSerials
        guard running else {
            state.stopped = true
            state.finished.signal()
            return
        }
        let state = self.state
        // The thread takes the pools out of the hand-off and lets go of them before it signals
        // `finished`, not when Foundation frees its closure later: a pool whose last connection
        // closed after the storage was gone, and after `ostore-server restore` put a new file in
        // its place in the same process, would remove that file's WAL (as ``BackgroundCheckpointer``
        // says of its own connection).
        let pools = Mutex<(log: DatabasePool, state: DatabasePool)?>((log, stateFile))
        let thread = Thread {
            // Given before the start, Foundation keeps the name to itself on Linux; set on the
            // running thread, it gives it to the OS (`top -H`, `perf`, /proc/PID/task/*/comm).
            Thread.current.name = "ostore-fold"
            do {
                guard let (log, stateFile) = pools.withLock({ $0.take() }) else { return }
                while var handed = state.nextRound() {
                    do {
                        let folded = try SQLiteSyncStorage.fold(
                            &handed, log: log, state: stateFile, limit: Self.changesPerFold)
                        state.finishRound(folded: folded, leftOver: handed, failure: nil)?(.recovered)
                    } catch {
                        // The log keeps every change: what was in memory is read back from it next time.
                        state.finishRound(folded: nil, leftOver: [:], failure: "\(error)")?(.failed("\(error)"))
                        Thread.sleep(forTimeInterval: 0.5)
                    }
                }
            }
            state.finished.signal()
        }
        thread.start()
    }

    /// Waits for a fold in progress to commit and for the thread to let go of both pools.
    deinit {
        state.stop()
        state.finished.wait()
    }

    /// Called by a push after its transaction committed, with the changes it appended and the
    /// dataset's `lastSerial` as that transaction saw it. Returns at once
    /// unless more than ``maximumLag`` changes of the dataset are unfolded; then it waits for the
    /// fold (not when the folder is stopped or its last round failed: the push is stored, and the
    /// folder retries on its own).
    func handOver(_ run: Run, datasetID: Int64, lastSerial: Int64) {
        state.condition.lock()
        defer { state.condition.unlock() }
        guard !state.stopped else { return }
        if let run = run.after(state.folded[datasetID] ?? 0) {
            state.handed[datasetID, default: []].append(run)
            state.handedCount += run.changes.count
        }
        if !state.pending {
            state.pending = true
            state.firstPendingAt = Date()
        }
        state.condition.broadcast()
        while !state.stopped, state.failure == nil,
            (state.folded[datasetID] ?? 0) < lastSerial - Self.maximumLag
        {
            state.urgent = true
            state.condition.broadcast()
            state.condition.wait()
        }
    }

    /// Starts a round now, though no push handed anything over (one that brings the scope index to
    /// rules set since, ``SQLiteSyncStorage/setScopeRules(_:definition:dataset:)``), and waits for
    /// it to end, or `timeout` to pass, or the folder to stop or fail.
    func foldNow(timeout: Duration) {
        let deadline = Date().addingTimeInterval(
            Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        state.condition.lock()
        defer { state.condition.unlock() }
        if !state.pending {
            state.pending = true
            state.firstPendingAt = Date()
        }
        state.urgent = true
        state.condition.broadcast()
        while !state.stopped, state.failure == nil, state.pending || state.isFolding {
            guard state.condition.wait(until: deadline) else { return }
        }
    }

    /// Waits until every dataset's state has caught up with its log, or the folder has stopped.
    /// What needs the whole state (a test, an operator's check) calls it; pulls do not, since a
    /// snapshot carries the serial it was folded to.
    func waitUntilFolded() {
        state.condition.lock()
        defer { state.condition.unlock() }
        while !state.stopped && (state.pending || state.isFolding || state.hasMore) {
            state.urgent = true
            state.condition.broadcast()
            state.condition.wait()
        }
    }

    /// Waits until dataset `datasetID` is folded through `serial`, or `timeout` has passed, or
    /// the folder has stopped or failed. A first pull calls it, so that right after a burst of
    /// pushes its download is still the live rows rather than the rows plus the unfolded history;
    /// when it gives up the snapshot is still complete (the cursor resumes the log at what was
    /// folded).
    func waitUntilFolded(datasetID: Int64, through serial: Int64, timeout: Duration) {
        let deadline = Date().addingTimeInterval(
            Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18)
        state.condition.lock()
        defer { state.condition.unlock() }
        while !state.stopped, state.failure == nil, (state.folded[datasetID] ?? 0) < serial {
            state.urgent = true
            state.condition.broadcast()
            guard state.condition.wait(until: deadline) else { return }
        }
    }

    /// Sends the folder's ``FoldEvent``s to `report` (the server's log), from the folder's thread.
    func report(to report: @escaping @Sendable (FoldEvent) -> Void) {
        state.condition.lock()
        defer { state.condition.unlock() }
        state.report = report
    }

    /// What the operator is told: a fold failed (the folder retries every half second, and tells
    /// each streak of failures once: snapshots then trail the log, which stays complete), and the
    /// first fold that succeeded after a failure.
    enum FoldEvent: Sendable, Equatable {
        case failed(String)
        case recovered
    }

    /// The changes one push appended, in serial order from `firstSerial`. An array in serial
    /// order rather than a dictionary by serial: growing and copying one per push cost the push
    /// and the fold more than merging its changes.
    struct Run: Sendable {
        var firstSerial: Int64
        var changes: ArraySlice<FoldChange>

        /// The serial after its last change.
        var endSerial: Int64 { firstSerial + Int64(changes.count) }

        /// Its changes after `serial`; nil when it has none.
        func after(_ serial: Int64) -> Run? {
            guard endSerial - 1 > serial else { return nil }
            guard firstSerial <= serial else { return self }
            return Run(firstSerial: serial + 1, changes: changes.dropFirst(Int(serial + 1 - firstSerial)))
        }
    }

    /// The hand-overs not folded yet, by dataset: one run per push, in no particular order.
    typealias Pending = [Int64: [Run]]

    /// What one fold committed: each dataset's new `foldedSerial`, and whether any dataset still
    /// has more to fold.
    struct Folded: Sendable {
        var serials: [Int64: Int64]
        var hasMore: Bool
    }

    /// `@unchecked Sendable` is safe because every stored property but `finished` (itself
    /// thread-safe) is only read or written while `condition` is locked.
    private final class State: @unchecked Sendable {
        let condition = NSCondition()
        var handed: Pending = [:]
        var handedCount = 0
        /// When `pending` last became true: a round waits up to ``gatheringTime`` from then for
        /// more pushes to fold with, unless enough are in or someone waits for the fold.
        var firstPendingAt = Date()
        /// Someone waits for the fold: fold now.
        var urgent = false
        /// Each dataset's `foldedSerial` as of the last fold that touched it (0 for one not in it):
        /// only the folder's thread writes the state file, so this is what it holds.
        var folded: [Int64: Int64] = [:]
        /// Starts true: the log may hold a tail a crash left unfolded.
        var pending = true
        var isFolding = false
        var hasMore = false
        var failure: String?
        /// Whether the failure streak going on was told to `report`.
        var failureTold = false
        var report: (@Sendable (FoldEvent) -> Void)?
        var stopped = false
        let finished = DispatchSemaphore(value: 0)

        /// Waits for work and takes the hand-overs; nil once stopped.
        func nextRound() -> Pending? {
            condition.lock()
            defer { condition.unlock() }
            while !stopped {
                if hasMore || urgent || handedCount >= StateFolder.changesPerFold { break }
                if pending {
                    if !condition.wait(until: firstPendingAt.addingTimeInterval(StateFolder.gatheringTime)) { break }
                } else {
                    condition.wait()
                }
            }
            guard !stopped else { return nil }
            pending = false
            urgent = false
            isFolding = true
            let taken = handed
            handed = [:]
            handedCount = 0
            return taken
        }

        /// Records the round's outcome; returns `report` when the outcome is news to the operator
        /// (the first failure of a streak, or the success that ends one), to call outside the lock.
        func finishRound(folded: Folded?, leftOver: Pending, failure: String?) -> (@Sendable (FoldEvent) -> Void)? {
            condition.lock()
            defer { condition.unlock() }
            let news = (failure != nil) != failureTold
            failureTold = failure != nil
            for (datasetID, runs) in leftOver {
                handed[datasetID, default: []] += runs
                handedCount += Self.count(runs)
            }
            if !leftOver.isEmpty && !pending {
                pending = true
                firstPendingAt = Date()
            }
            if let folded {
                for (datasetID, serial) in folded.serials {
                    self.folded[datasetID] = serial
                    // Hand-overs that arrived while their changes were folded from the log.
                    if let runs = handed[datasetID] {
                        let kept = runs.compactMap { $0.after(serial) }
                        handedCount -= Self.count(runs) - Self.count(kept)
                        handed[datasetID] = kept
                    }
                }
                hasMore = folded.hasMore
            } else {
                hasMore = true
            }
            self.failure = failure
            isFolding = false
            condition.broadcast()
            return news ? report : nil
        }

        private static func count(_ runs: [Run]) -> Int {
            runs.reduce(0) { $0 + $1.changes.count }
        }

        func stop() {
            condition.lock()
            stopped = true
            condition.broadcast()
            condition.unlock()
        }
    }
}
