import Foundation

/// The threads request handlers run on, apart from libmicrohttpd's polling threads: a handler may
/// block (a group commit, a long snapshot read) without holding up the other connections of the
/// polling thread that received its request, as the manual's "Flow control" chapter asks of every
/// mode but thread-per-connection
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dflow).
///
/// At most `limit` handlers run at once, as many as there are polling threads: more at once would
/// only contend for the same cores and the one SQLite writer. The others wait in arrival order. A
/// handler that waits for another request's work (a push waiting for the batch it follows) does it
/// inside ``stepAside(_:)``, which lends its place meanwhile: otherwise `limit` such waits could hold
/// every place while the requests they wait for queue behind them. Threads are made when needed;
/// one idle for `idleTimeout` ends.
///
/// ```swift
/// let threads = HandlerThreads(limit: 4)
/// threads.run { answer(request) }
/// ```
///
/// `@unchecked Sendable`: `jobs`, `running`, `returning` and `idleWorkers` are read and written only
/// while `condition` is locked; `limit` and `idleTimeout` are immutable.
final class HandlerThreads: @unchecked Sendable {
    private let condition = NSCondition()
    /// Jobs waiting for a place, oldest first.
    private var jobs: [@Sendable () -> Void] = []
    /// Handlers holding a place: running, not stepped aside.
    private var running = 0
    /// Handlers back from ``stepAside(_:)`` waiting for a place: they take one before any queued job,
    /// or a stream of new requests could keep them out until the requests waiting for them give up.
    private var returning = 0
    /// Threads waiting for a job.
    private var idleWorkers = 0
    private let limit: Int
    private let idleTimeout: TimeInterval
    private static let currentKey = "OfflineStore.HandlerThreads"

    init(limit: Int, idleTimeout: Duration = .seconds(10)) {
        self.limit = max(1, limit)
        self.idleTimeout = idleTimeout.inSeconds
    }

    /// Jobs waiting for a place, and handlers back from ``stepAside(_:)`` waiting for one: what a
    /// test waits for instead of sleeping, so the order it checks does not depend on the scheduler.
    var waiting: (jobs: Int, returning: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (jobs.count, returning)
    }

    /// Runs `job` on a thread of this pool once fewer than `limit` handlers run.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        wakeOrMakeWorker()
        condition.unlock()
    }

    /// Runs `wait` (which waits for another request's work) with the calling handler's place lent
    /// to a queued one, and takes a place again before returning. Called on any other thread (a
    /// test calling a handler directly), it just runs `wait`.
    static func stepAside<Result>(_ wait: () throws -> Result) rethrows -> Result {
        guard let pool = Thread.current.threadDictionary[currentKey] as? HandlerThreads else { return try wait() }
        pool.condition.lock()
        pool.running -= 1
        pool.wakeOrMakeWorker()
        // A handler back from its own wait may be waiting for this place.
        pool.condition.broadcast()
        pool.condition.unlock()
        defer {
            pool.condition.lock()
            pool.returning += 1
            while pool.running >= pool.limit { pool.condition.wait() }
            pool.returning -= 1
            pool.running += 1
            pool.condition.unlock()
        }
        return try wait()
    }

    /// For each job that may run now (queued, with a place free): an idle thread woken, or a new
    /// one. Called with `condition` locked.
    private func wakeOrMakeWorker() {
        let runnable = min(jobs.count, limit - running - returning)
        guard runnable > 0 else { return }
        // Idle threads (woken or not yet) each take one job; a new thread counts as idle from here.
        while idleWorkers < runnable {
            idleWorkers += 1
            Thread { [self] in work() }.start()
        }
        condition.broadcast()
    }

    private func work() {
        Thread.current.threadDictionary[Self.currentKey] = self
        condition.lock()
        // A new thread starts counted as idle (see wakeOrMakeWorker).
        idleWorkers -= 1
        while true {
            while jobs.isEmpty || running + returning >= limit {
                idleWorkers += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
                idleWorkers -= 1
                if !woken && (jobs.isEmpty || running + returning >= limit) {
                    condition.unlock()
                    return
                }
            }
            let job = jobs.removeFirst()
            running += 1
            condition.unlock()
            job()
            condition.lock()
            running -= 1
            // A place freed: this thread takes the next job itself; a handler back from
            // stepAside may be waiting for the place.
            condition.broadcast()
        }
    }
}
