import Foundation
import SyncProtocol

/// The store's hybrid logical clock: every reading is later than every reading before it, even
/// when the wall clock steps backwards, and later than every clock received from another site.
/// A clock received too far in the future (more than ``maximumDrift`` ahead of this machine's
/// wall clock) is refused rather than adopted, so one peer with a wrong clock cannot drag every
/// other peer's clock into the future.
///
/// ```swift
/// let clock = HybridLogicalClock(lastIssued: .zero)
/// let first = clock.now()
/// let second = clock.now()
/// #expect(first < second)
/// try clock.receive(remoteStamp)  // throws ChangeLogError for a stamp beyond the drift bound
/// ```
///
/// It is shared by every connection of a store, hence `Sendable`; readings are serialised by a
/// lock. The last reading is persisted with the changes that carry it, so a restart continues
/// from it (see ``Metadatabase``).
package final class HybridLogicalClock: Sendable {
    /// How far ahead of this machine's wall clock a received clock may be: 5 minutes.
    package static let defaultMaximumDrift: Duration = .seconds(300)

    package let maximumDrift: Duration
    private let state: LockedState
    private let wallClock: @Sendable () -> Int64

    /// - Parameters:
    ///   - lastIssued: the latest reading this store ever issued or received (persisted).
    ///   - wallClock: milliseconds since 1970; tests pass a fake one.
    package init(
        lastIssued: ChangeClock, maximumDrift: Duration = defaultMaximumDrift,
        wallClock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
    ) {
        self.maximumDrift = maximumDrift
        self.wallClock = wallClock
        state = LockedState(lastIssued)
    }

    /// The latest reading issued or received.
    package var lastIssued: ChangeClock { state.withLock { $0 } }

    /// A new reading, later than every earlier one.
    package func now() -> ChangeClock {
        let wall = wallMilliseconds()
        return state.withLock { last in
            // 65,536 readings in one millisecond borrow the next millisecond (ChangeClock.successor).
            let next = wall > last.milliseconds ? ChangeClock(validMilliseconds: wall, counter: 0) : last.successor
            last = next
            return next
        }
    }

    /// The latest clock reading this machine can have issued with a right wall clock, or accepted
    /// from another site: its wall clock now plus ``maximumDrift``. A local change stamped beyond
    /// it was stamped while the wall clock ran ahead (see ``ChangeLog/restampClocksAhead(_:)``).
    package var driftBound: ChangeClock { driftBound(wall: wallMilliseconds()) }

    private func driftBound(wall: Int64) -> ChangeClock {
        let bound = min(wall + Int64(maximumDrift.components.seconds) * 1000, ChangeClock.maximumMilliseconds)
        return ChangeClock(validMilliseconds: bound, counter: ChangeClock.maximumCounter)
    }

    /// The wall clock in the range a reading can hold.
    private func wallMilliseconds() -> Int64 { min(max(wallClock(), 0), ChangeClock.maximumMilliseconds) }

    /// Moves the clock past `persisted`, the newest reading this store's files hold (another
    /// process of the same store issued or received it): no drift bound, as it was checked when it
    /// came in. One exception: a clock of this process beyond ``driftBound`` while the files'
    /// newest is not: this process issued it while the machine's wall clock ran ahead, and
    /// ``ChangeLog/restampClocksAhead(_:)`` has since re-stamped what the files held of that time,
    /// so the clock goes back to the files' newest instead of stamping the next write out of reach.
    func catchUp(to persisted: ChangeClock) {
        let bound = driftBound
        state.withLock { last in
            if persisted > last || (last > bound && persisted <= bound) { last = persisted }
        }
    }

    /// Sets the clock back to `reading`: only for ``ChangeLog/restampClocksAhead(_:)``, which
    /// re-stamps every stored reading after it in the same transaction.
    func reset(to reading: ChangeClock) {
        state.withLock { last in last = reading }
    }

    /// Takes a clock from another site into account, so later local readings order after it.
    /// Throws ``ChangeLogError`` (`.clockTooFarInFuture`) beyond the drift bound; the clock is
    /// then unchanged.
    package func receive(_ remote: ChangeClock) throws(ChangeLogError) {
        let wall = wallMilliseconds()
        guard remote <= driftBound(wall: wall) else {
            throw ChangeLogError(
                .clockTooFarInFuture,
                "a received clock reading (\(remote)) is \((remote.milliseconds - wall) / 1000) s ahead of this "
                    + "machine's clock, more than the \(maximumDrift.components.seconds) s allowed",
                fix: "check the sending device's clock; the change is refused, not applied")
        }
        state.withLock { last in
            if remote > last { last = remote }
        }
    }
}

/// The clock's last reading under a lock.
///
/// `@unchecked Sendable`: `value` is only read or written inside `lock.withLock`, so no two
/// threads touch it at once. (`Synchronization.Mutex` would do, but the thread sanitizer reports
/// false races on it on Linux.)
private final class LockedState: @unchecked Sendable {
    private let lock = NSLock()
    private var value: ChangeClock

    init(_ value: ChangeClock) { self.value = value }

    func withLock<Result>(_ body: (inout ChangeClock) -> Result) -> Result {
        lock.withLock { body(&value) }
    }
}
