import Foundation
import Synchronization

/// A statement's row counter, kept in memory that is never freed.
///
/// A ``Row`` read from a cursor remembers the counter and the count it saw. The
/// count matching means the statement is alive and still on that row, so a row
/// needs no strong reference to its statement, and reading rows costs no
/// reference counting. When a statement goes away its counter moves on once
/// more and is handed to a later statement, which counts on from there: an old
/// row never matches again. Counts are atomics (relaxed: one writer, and a row
/// only compares), so a stale row read on another thread is no data race.
@usableFromInline
struct RowGeneration {
    @usableFromInline let counter: UnsafeMutablePointer<Atomic<UInt64>>

    /// The current count.
    @inlinable
    var current: UInt64 { counter.pointee.load(ordering: .relaxed) }

    /// Moves to a new count: rows that saw the previous one become stale.
    func advance() {
        counter.pointee.store(current &+ 1, ordering: .relaxed)
    }

    /// A counter for a new statement: a recycled one, or a new allocation.
    static func acquire() -> RowGeneration {
        if let recycled = recycledCounters.pop() { return RowGeneration(counter: recycled) }
        let counter = UnsafeMutablePointer<Atomic<UInt64>>.allocate(capacity: 1)
        counter.initialize(to: Atomic(0))
        return RowGeneration(counter: counter)
    }

    /// Gives the counter back when its statement goes away.
    func relinquish() {
        advance()
        recycledCounters.push(counter)
    }
}

/// Counters of finished statements, waiting for the next statement.
///
/// `@unchecked Sendable` is safe because `counters` is only touched while `lock`
/// is held; the counters themselves are atomics and are never freed.
private final class RecycledCounters: @unchecked Sendable {
    private let lock = NSLock()
    private var counters: [UnsafeMutablePointer<Atomic<UInt64>>] = []

    func pop() -> UnsafeMutablePointer<Atomic<UInt64>>? {
        lock.withLock { counters.popLast() }
    }

    func push(_ counter: UnsafeMutablePointer<Atomic<UInt64>>) {
        lock.withLock { counters.append(counter) }
    }
}

private let recycledCounters = RecycledCounters()
