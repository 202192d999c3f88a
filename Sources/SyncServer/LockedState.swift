import Foundation

/// A value guarded by a lock. NSLock rather than `Mutex`: the thread sanitizer the suite runs
/// under reports false races on `Mutex` in this toolchain.
final class LockedState<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched inside `lock.withLock` in `withLock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }

    /// The value now. Read a closure this way, never as `withLock { $0 }`: this toolchain writes a
    /// function value passed `inout` back wrapped in one more reabstraction thunk on every such read,
    /// so each call of it would run deeper than the one before.
    var current: Value { lock.withLock { value } }
}
