import Foundation

/// A request started on another thread and collected later: how the engine keeps the server
/// busy with the next pull page while the store applies the last one.
///
/// `@unchecked Sendable`: `result` and `cancelled` are read and written only between
/// `lock.lock()` and `lock.unlock()`; `done` and `endedToo` are semaphores, safe from any thread.
final class Prefetch<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    /// Signalled once `ended` has returned too.
    private let endedToo = DispatchSemaphore(value: 0)
    private var result: Result<Value, SyncError>?
    private var cancelled = false

    /// Starts `work` at once, on a thread of its own; it receives a question to ask before retrying
    /// ("is anybody still waiting?").
    ///
    /// Not on Dispatch's shared queues: the work blocks for a whole request, backoff sleeps
    /// included, and Dispatch runs a limited number of blocked workers: under the whole test suite's
    /// load a blocking task queued there was seen to start more than 10 s late, and a process with
    /// many engines would queue their requests behind each other. A thread per request costs tens
    /// of microseconds against a request's milliseconds. When the system makes no thread (too many
    /// already), the request goes to Dispatch after all: late, never lost.
    ///
    /// `start` runs its argument on a new thread and says whether it could (a test replaces it).
    /// `ended` is told the outcome on that thread once ``isReady`` is true; whoever waits in
    /// ``value()`` does not wait for it (it may log through an app's handler, which may block).
    init(
        _ work: @escaping @Sendable (_ isCancelled: @escaping @Sendable () -> Bool) throws(SyncError) -> Value,
        ended: (@Sendable (Result<Value, SyncError>) -> Void)? = nil,
        start: (@escaping @Sendable () -> Void) -> Bool = { DetachedThread.start(named: threadName, $0) }
    ) {
        let run: @Sendable () -> Void = { [self] in
            let outcome = Result { () throws(SyncError) -> Value in try work { [self] in lock.withLock { cancelled } } }
            lock.withLock { result = outcome }
            done.signal()
            ended?(outcome)
            endedToo.signal()
        }
        if !start(run) { DispatchQueue.global().async(execute: run) }
    }

    /// The name of the threads requests run on, as debuggers and `perf` show them.
    static var threadName: String { "ostore-request" }

    /// Waits for the work to end and returns what it gave (the same each time it is asked).
    func value() throws(SyncError) -> Value {
        done.wait()
        // Signalled again for whoever asks next (``value()`` once more).
        done.signal()
        return try lock.withLock { result! }.get()
    }

    /// Waits up to `timeout` for the work to end; whether it has.
    func wait(upTo timeout: Duration) -> Bool {
        let nanoseconds = max(
            0, timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        guard done.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .success else { return false }
        done.signal()
        return true
    }

    /// Whether the work has ended, so that ``value()`` returns at once.
    var isReady: Bool { lock.withLock { result != nil } }

    /// Tells the work nobody needs its answer (it stops before its next retry), and waits for it
    /// and its `ended` to end, so nothing uses the transport once the engine has returned.
    func abandon() {
        cancel()
        endedToo.wait()
        endedToo.signal()
    }

    /// Tells the work nobody needs its answer, without waiting for it to end.
    func cancel() {
        lock.withLock { cancelled = true }
    }
}
