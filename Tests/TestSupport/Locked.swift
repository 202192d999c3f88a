import Foundation

/// A value shared with `@Sendable` closures (hooks, SQL functions, handlers, other threads), behind a lock.
///
/// `@unchecked Sendable` is safe because `storage` is only touched while `lock` is held. It is an `NSLock`
/// rather than `Synchronization.Mutex` because ConcurrencyTests run under the thread sanitizer, which on Linux
/// does not see a contended `Mutex`'s futex wait and reports false races; it does see pthread locks.
public final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Value

    public init(_ value: Value) {
        storage = value
    }

    public var value: Value {
        get { lock.withLock { storage } }
        set { lock.withLock { storage = newValue } }
    }

    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&storage) }
    }
}
