import Foundation

/// A request started on another thread and collected later: how the engine keeps the server
/// busy with the next pull page while the store applies the last one.
///
/// `@unchecked Sendable`: `result` and `cancelled` are read and written only between
/// `lock.lock()` and `lock.unlock()`; `done` is a semaphore, safe from any thread.
final class Prefetch<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<Value, SyncError>?
    private var cancelled = false

    /// Starts `work` at once; it receives a question to ask before retrying ("is anybody still waiting?").
    init(_ work: @escaping @Sendable (_ isCancelled: @escaping @Sendable () -> Bool) throws(SyncError) -> Value) {
        DispatchQueue.global().async { [self] in
            let outcome = Result { () throws(SyncError) -> Value in try work { [self] in lock.withLock { cancelled } } }
            lock.withLock { result = outcome }
            done.signal()
        }
    }

    /// Waits for the work to end and returns what it gave (the same each time it is asked).
    func value() throws(SyncError) -> Value {
        done.wait()
        // Signalled again for whoever asks next (``value()`` once more, or ``abandon()``).
        done.signal()
        return try lock.withLock { result! }.get()
    }

    /// Whether the work has ended, so that ``value()`` returns at once.
    var isReady: Bool { lock.withLock { result != nil } }

    /// Tells the work nobody needs its answer (it stops before its next retry), and waits for it
    /// to end, so nothing uses the transport once the engine has returned.
    func abandon() {
        cancel()
        done.wait()
    }

    /// Tells the work nobody needs its answer, without waiting for it to end.
    func cancel() {
        lock.withLock { cancelled = true }
    }
}
