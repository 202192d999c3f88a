import Foundation
import SyncProtocol
import Synchronization

/// Pushes waiting for the batch they follow (``PushRequest/after``), each until its site's
/// high-water mark reaches its `after` or its deadline passes. A waiting push holds no thread: its
/// connection is suspended (``DeferredResponse``) and one watcher thread, shared by all, checks the
/// high-water marks when this server stores a batch of a waiting site, every `recheck` (for batches
/// stored through other servers sharing the database) and at each deadline.
///
/// The waits are bounded so that no client can hold them all: at most `perSite` pushes of one site
/// wait for a batch not stored yet, `perToken` of one token, and `total` in all; a push beyond them
/// is refused at once.
///
/// ```swift
/// let waits = WaitingPushes(limits: .init(perSite: 1, perToken: 16, total: 64)) { site in
///     try storage.datasetState(site.dataset, site: site.site).siteHighWater
/// }
/// ```
///
/// `@unchecked Sendable`: `waiters`, `isChecking` and `isWatching` are read and written only while
/// `condition` is locked; the rest is immutable and `Sendable`.
final class WaitingPushes: @unchecked Sendable {
    struct Site: Hashable {
        let dataset: String
        let site: SiteID
    }

    struct Limits: Sendable {
        var perSite: Int
        var perToken: Int
        var total: Int
    }

    enum Refusal: Error {
        case siteLimit, tokenLimit, totalLimit
    }

    private struct Waiter {
        let site: Site
        let token: String
        let after: Int64
        let deadline: ContinuousClock.Instant
        let wake: @Sendable (_ stored: Bool) -> Void
    }

    let limits: Limits
    private let highWater: @Sendable (Site) throws -> Int64
    private let recheck: Duration
    private let idleTimeout: Duration
    private let condition = NSCondition()
    private var waiters: [Waiter] = []
    /// Set when a batch of a waiting site was stored: the watcher checks at once.
    private var isChecking = false
    private var isWatching = false
    /// How many wait, read without the lock by ``stored(dataset:site:)`` on every push.
    private let count = Atomic<Int>(0)

    init(
        limits: Limits, recheck: Duration = .milliseconds(50), idleTimeout: Duration = .seconds(10),
        highWater: @escaping @Sendable (Site) throws -> Int64
    ) {
        self.limits = limits
        self.highWater = highWater
        self.recheck = recheck
        self.idleTimeout = idleTimeout
    }

    /// Pushes waiting now.
    var waiting: Int { count.load(ordering: .relaxed) }

    /// Adds a push of `site` (sent with `token`) that waits until the site's high-water mark,
    /// `highWater` when it was read, reaches `after`. `wake` is called once, on the watcher thread,
    /// with `true` when it did and `false` at `deadline`.
    func wait(
        _ site: Site, token: String, after: Int64, highWater: Int64, until deadline: ContinuousClock.Instant,
        wake: @escaping @Sendable (_ stored: Bool) -> Void
    ) throws(Refusal) {
        condition.lock()
        defer { condition.unlock() }
        guard waiters.count < limits.total else { throw .totalLimit }
        // A push whose batch before is stored no longer waits, though the watcher may not have woken it
        // yet: its client, answered for that batch, may send the next one meanwhile.
        guard waiters.count(where: { $0.site == site && $0.after > highWater }) < limits.perSite else {
            throw .siteLimit
        }
        guard waiters.count(where: { $0.token == token }) < limits.perToken else { throw .tokenLimit }
        waiters.append(Waiter(site: site, token: token, after: after, deadline: deadline, wake: wake))
        count.add(1, ordering: .relaxed)
        if !isWatching {
            isWatching = true
            Thread { [self] in watch() }.start()
        }
        condition.signal()
    }

    /// This server stored a batch of `site`: a push waiting for it is woken now, not at the next
    /// recheck.
    func stored(dataset: String, site: SiteID) {
        guard count.load(ordering: .relaxed) > 0 else { return }
        condition.lock()
        if waiters.contains(where: { $0.site.site == site && $0.site.dataset == dataset }) {
            isChecking = true
            condition.signal()
        }
        condition.unlock()
    }

    private func watch() {
        condition.lock()
        while true {
            if waiters.isEmpty {
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout.inSeconds))
                if !woken && waiters.isEmpty {
                    isWatching = false
                    condition.unlock()
                    return
                }
                continue
            }
            if !isChecking {
                let earliest = waiters.map(\.deadline).min()!
                let wait = min(recheck, max(.zero, earliest - .now))
                _ = condition.wait(until: Date(timeIntervalSinceNow: wait.inSeconds))
            }
            isChecking = false
            let sites = Set(waiters.map(\.site))
            condition.unlock()
            var marks: [Site: Int64] = [:]
            for site in sites {
                // A storage that cannot answer now is asked again at the next check, or the deadline.
                marks[site] = try? highWater(site)
            }
            let now = ContinuousClock.now
            condition.lock()
            var woken: [(Waiter, Bool)] = []
            waiters.removeAll { waiter in
                if let mark = marks[waiter.site], mark >= waiter.after {
                    woken.append((waiter, true))
                    return true
                }
                if now >= waiter.deadline {
                    woken.append((waiter, false))
                    return true
                }
                return false
            }
            count.subtract(woken.count, ordering: .relaxed)
            condition.unlock()
            for (waiter, stored) in woken { waiter.wake(stored) }
            condition.lock()
        }
    }
}
