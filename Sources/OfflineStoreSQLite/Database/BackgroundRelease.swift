import Dispatch
import Synchronization

/// Frees a large value on a thread of its own rather than on one whose time others wait for: the
/// thread applying pulled pages (which holds the write lock) and a server's request threads
/// (whose clients wait for the answer).
///
/// A pulled page of 5,000 changes holds tens of thousands of allocations: each change's
/// dictionaries, strings and site id, and what preparing it made; freeing them is a noticeable
/// part of the apply thread's work. A value is worth handing over only when it holds thousands of
/// allocations: the caller decides.
///
/// ```swift
/// var batch: PreparedChanges? = log.prepare(page.changes)
/// _ = try log.apply(batch!, to: db)
/// BackgroundRelease.release(&batch)  // batch is nil now
/// ```
///
/// See <https://developer.apple.com/documentation/dispatch/dispatchqueue>.
package enum BackgroundRelease {
    /// Utility priority: the freeing waits while the threads that do the work have it.
    private static let queue = DispatchQueue(label: "ostore-release", qos: .utility)

    /// Takes the value out of `value` (nil afterwards) and frees it on the queue's thread. The
    /// caller must hold no other copy of it, or that copy is the one that frees it.
    package static func release<Value: Sendable>(_ value: inout Value?) {
        guard value != nil else { return }
        // Moved straight in: a local binding of it would be one more copy, freed here.
        let held = Held(value.take()!)
        queue.async { held.free() }
    }

    /// The value, moved in and freed by whichever thread runs ``free()``.
    private final class Held<Value: Sendable>: Sendable {
        private let value: Mutex<Value?>

        init(_ value: consuming Value) {
            self.value = Mutex(value)
        }

        func free() {
            value.withLock { $0 = nil }
        }
    }
}
