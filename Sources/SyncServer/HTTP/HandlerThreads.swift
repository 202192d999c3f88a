import Foundation

/// The threads request handlers run on, apart from libmicrohttpd's polling threads: a handler may
/// block (a group commit, a long snapshot read) without holding up the other connections of the
/// polling thread that received its request, as the manual's "Flow control" chapter asks of every
/// mode but thread-per-connection
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dflow).
///
/// At most `limit` handlers run at once, as many as there are polling threads: more at once would
/// only contend for the same cores and the one SQLite writer. The others wait in arrival order. A
/// request that waits for another's work (a push waiting for the batch it follows) takes no place
/// while it waits: its answer is deferred (``DeferredResponse``), and only the work once it may go on
/// runs here. Threads are made when needed; one idle for `idleTimeout` ends.
///
/// ```swift
/// let threads = HandlerThreads(limit: 4)
/// threads.run { answer(request) }
/// ```
///
/// `@unchecked Sendable`: `jobs`, `running` and `idleWorkers` are read and written only while
/// `condition` is locked; `limit` and `idleTimeout` are immutable.
final class HandlerThreads: @unchecked Sendable {
    private let condition = NSCondition()
    /// Jobs waiting for a place, oldest first.
    private var jobs: [@Sendable () -> Void] = []
    /// Handlers holding a place.
    private var running = 0
    /// Threads waiting for a job.
    private var idleWorkers = 0
    private let limit: Int
    private let idleTimeout: TimeInterval

    init(limit: Int, idleTimeout: Duration = .seconds(10)) {
        self.limit = max(1, limit)
        self.idleTimeout = idleTimeout.inSeconds
    }

    /// Runs `job` on a thread of this pool once fewer than `limit` handlers run.
    func run(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        wakeOrMakeWorker()
        condition.unlock()
    }

    /// For each job that may run now (queued, with a place free): an idle thread woken, or a new
    /// one. Called with `condition` locked.
    private func wakeOrMakeWorker() {
        let runnable = min(jobs.count, limit - running)
        guard runnable > 0 else { return }
        // Idle threads (woken or not yet) each take one job; a new thread counts as idle from here.
        while idleWorkers < runnable {
            idleWorkers += 1
            Thread { [self] in work() }.start()
        }
        condition.broadcast()
    }

    private func work() {
        condition.lock()
        // A new thread starts counted as idle (see wakeOrMakeWorker).
        idleWorkers -= 1
        while true {
            while jobs.isEmpty || running >= limit {
                idleWorkers += 1
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout))
                idleWorkers -= 1
                if !woken && (jobs.isEmpty || running >= limit) {
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
            // A place freed: this thread takes the next job itself.
        }
    }
}
