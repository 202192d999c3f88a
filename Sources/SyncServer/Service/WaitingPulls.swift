import Foundation
import SyncProtocol
import Synchronization

/// Live pulls waiting for a change (``PullRequest/wait``, Protocol/README.md section 10.5): each
/// until a change is stored in its dataset that its page would carry, its deadline passes, or the
/// server stops. A waiting pull holds no thread: its connection is suspended (``DeferredResponse``)
/// and one waker thread, started when the first pull waits, reads the pages of the pulls a stored
/// change woke (several at once, one per core) and answers those it brought something for; a pull
/// woken by its own site's change waits on.
///
/// No change is missed between a pull's read and its wait: each dataset has a generation,
/// counted up by every stored change, that the pull read before its page; a pull whose dataset
/// moved meanwhile is woken as soon as it waits.
///
/// The waits are bounded so that no client can hold them all: `perAddress` pulls of one client
/// address and `total` in all. A site waits once: its new pull answers its older waiting one at
/// once (a client that lost its connection, or gave up on the answer, pulls again).
///
/// ```swift
/// let waits = WaitingPulls(limits: .init(total: 2048, perAddress: 128))
/// let generation = waits.generation(of: "family")
/// // read the page; caught up:
/// try waits.wait(pull, seen: generation)
/// // after a push to "family" is stored:
/// waits.changed(dataset: "family")
/// ```
///
/// `@unchecked Sendable`: every `var` is read and written only while `condition` is locked; the
/// rest is immutable and `Sendable`.
final class WaitingPulls: @unchecked Sendable {
    struct Limits: Sendable {
        var total: Int
        var perAddress: Int
    }

    enum Refusal: Error {
        case totalLimit, addressLimit
    }

    /// Which change a pull has seen: its dataset's count of stored changes, and the count of
    /// times every dataset was marked changed at once (a notification channel that came back).
    struct Generation: Equatable, Sendable {
        fileprivate let dataset: UInt64
        fileprivate let everything: UInt64
    }

    /// A pull that waits: who it is and how it is answered.
    struct Pull: Sendable {
        let dataset: String
        let site: SiteID
        let address: String
        let deadline: ContinuousClock.Instant
        /// The pull's answer as it would be now; nil while it would bring nothing and `final` is
        /// false. Called on the waker thread, never with the lock held, with the pages read for
        /// the pulls answered with it.
        let answer: @Sendable (_ final: Bool, _ pages: SharedLogPages) -> HTTPResponse?
        /// Sends the answer (``DeferredResponse/send(_:)``).
        let send: @Sendable (HTTPResponse) -> Void
    }

    private struct Key: Hashable {
        let dataset: String
        let site: SiteID
    }

    let limits: Limits
    private let idleTimeout: Duration
    private let condition = NSCondition()
    private var waiting: [Key: Pull] = [:]
    private var perAddress: [String: Int] = [:]
    /// Each dataset's stored changes, counted (only datasets with a change since the server started).
    private var generations: [String: UInt64] = [:]
    private var everythingGeneration: UInt64 = 0
    /// Datasets with a change whose waiting pulls the waker has not read again yet.
    private var changedDatasets: Set<String> = []
    /// Pulls to answer now whatever they would bring: replaced by a newer pull of their site, or
    /// the server stops.
    private var answerNow: [Pull] = []
    private var isStopping = false
    private var isWaking = false
    /// How many wait, read without the lock on every stored push.
    private let count = Atomic<Int>(0)

    init(limits: Limits, idleTimeout: Duration = .seconds(10)) {
        self.limits = limits
        self.idleTimeout = idleTimeout
    }

    /// Pulls waiting now.
    var waitingCount: Int { count.load(ordering: .relaxed) }

    /// What `dataset` has seen so far; read before a pull reads its page.
    func generation(of dataset: String) -> Generation {
        condition.lock()
        defer { condition.unlock() }
        return generationLocked(of: dataset)
    }

    /// Lets `pull` wait, its page read when `dataset` was at `seen`. An earlier waiting pull of the
    /// same site is answered now. Returns false, and keeps nothing, once the server is stopping:
    /// the caller answers at once.
    func wait(_ pull: Pull, seen: Generation) throws(Refusal) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !isStopping else { return false }
        let key = Key(dataset: pull.dataset, site: pull.site)
        // The site's older pull gives its place to this one.
        let replaced = waiting[key]
        let others = waiting.count - (replaced == nil ? 0 : 1)
        let fromAddress = perAddress[pull.address, default: 0] - (replaced?.address == pull.address ? 1 : 0)
        guard others < limits.total else { throw .totalLimit }
        guard fromAddress < limits.perAddress else { throw .addressLimit }
        if let replaced {
            remove(replaced, key: key)
            answerNow.append(replaced)
        }
        put(pull, key: key)
        if generationLocked(of: pull.dataset) != seen { changedDatasets.insert(pull.dataset) }
        startWakerIfNeeded()
        condition.signal()
        return true
    }

    /// `site` pulls again without waiting: its waiting pull, if any, is answered now (its client
    /// no longer waits for that answer).
    func answerEarlier(dataset: String, site: SiteID) {
        guard count.load(ordering: .relaxed) > 0 else { return }
        condition.lock()
        let key = Key(dataset: dataset, site: site)
        if let earlier = waiting[key] {
            remove(earlier, key: key)
            answerNow.append(earlier)
            condition.signal()
        }
        condition.unlock()
    }

    /// A change was stored in `dataset` (by this server, or by another one sharing the database):
    /// its waiting pulls read their pages again.
    func changed(dataset: String) {
        condition.lock()
        generations[dataset, default: 0] &+= 1
        if count.load(ordering: .relaxed) > 0 {
            changedDatasets.insert(dataset)
            condition.signal()
        }
        condition.unlock()
    }

    /// Changes may have been stored in any dataset without word of them (the channel that carries
    /// them was lost): every waiting pull reads its page again.
    func changedEverywhere() {
        condition.lock()
        everythingGeneration &+= 1
        changedDatasets.formUnion(waiting.keys.map(\.dataset))
        condition.signal()
        condition.unlock()
    }

    /// Answers every waiting pull now, and every pull that asks to wait from now on at once: for
    /// a server that stops. Returns once those waiting are answered.
    func answerAllAndStop() {
        condition.lock()
        isStopping = true
        let all = Array(waiting.values)
        for (key, pull) in waiting { remove(pull, key: key) }
        condition.signal()
        condition.unlock()
        answer(all, final: true)
    }

    /// ``generation(of:)`` with `condition` locked by the caller.
    private func generationLocked(of dataset: String) -> Generation {
        Generation(dataset: generations[dataset] ?? 0, everything: everythingGeneration)
    }

    private func put(_ pull: Pull, key: Key) {
        waiting[key] = pull
        perAddress[pull.address, default: 0] += 1
        count.add(1, ordering: .relaxed)
    }

    private func remove(_ pull: Pull, key: Key) {
        waiting[key] = nil
        let left = perAddress[pull.address, default: 1] - 1
        perAddress[pull.address] = left > 0 ? left : nil
        count.subtract(1, ordering: .relaxed)
    }

    private func startWakerIfNeeded() {
        guard !isWaking else { return }
        isWaking = true
        Thread { [self] in wake() }.start()
    }

    /// The waker: answers the pulls that were replaced, woken or are past their deadline.
    private func wake() {
        condition.lock()
        while true {
            if waiting.isEmpty && answerNow.isEmpty && changedDatasets.isEmpty {
                let woken = condition.wait(until: Date(timeIntervalSinceNow: idleTimeout.inSeconds))
                if !woken && waiting.isEmpty && answerNow.isEmpty {
                    isWaking = false
                    condition.unlock()
                    return
                }
                continue
            }
            if answerNow.isEmpty && changedDatasets.isEmpty {
                let earliest = waiting.values.map(\.deadline).min()!
                let now = ContinuousClock.now
                if earliest > now {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: (earliest - now).inSeconds))
                }
            }
            let replaced = answerNow
            answerNow = []
            let now = ContinuousClock.now
            var expired: [Pull] = []
            var woken: [Pull] = []
            let changed = changedDatasets
            changedDatasets = []
            // What the woken pulls' datasets had seen when they were taken: a change stored while
            // their pages are read wakes them again.
            var seen: [String: Generation] = [:]
            for dataset in changed { seen[dataset] = generationLocked(of: dataset) }
            for (key, pull) in waiting {
                if pull.deadline <= now {
                    expired.append(pull)
                    remove(pull, key: key)
                } else if changed.contains(key.dataset) {
                    woken.append(pull)
                    remove(pull, key: key)
                }
            }
            condition.unlock()
            answer(replaced + expired, final: true)
            let unanswered = answer(woken, final: false)
            condition.lock()
            for pull in unanswered {
                let key = Key(dataset: pull.dataset, site: pull.site)
                // A newer pull of the site came meanwhile, or the server began to stop: this one is
                // answered now.
                if isStopping || waiting[key] != nil {
                    answerNow.append(pull)
                } else {
                    put(pull, key: key)
                    if seen[pull.dataset] != generationLocked(of: pull.dataset) {
                        changedDatasets.insert(pull.dataset)
                    }
                }
            }
        }
    }

    /// Answers `pulls` (several at once when there are many), returning those that would bring
    /// nothing and are not `final`.
    @discardableResult
    private func answer(_ pulls: [Pull], final: Bool) -> [Pull] {
        guard !pulls.isEmpty else { return [] }
        let unanswered = Mutex<[Pull]>([])
        let pages = SharedLogPages()
        let work: @Sendable (Int) -> Void = { index in
            let pull = pulls[index]
            if let response = pull.answer(final, pages) {
                pull.send(response)
            } else {
                unanswered.withLock { $0.append(pull) }
            }
        }
        if pulls.count < 8 {
            for index in pulls.indices { work(index) }
        } else {
            DispatchQueue.concurrentPerform(iterations: pulls.count, execute: work)
        }
        return unanswered.withLock { $0 }
    }
}
