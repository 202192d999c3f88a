import Foundation

/// Something told of the pool's commits: a ``ValueObservation`` started in it.
protocol PoolObserver: AnyObject, Sendable {
    /// A commit wrote `region` (``DatabaseRegion/everything`` when another connection committed).
    func databaseDidChange(_ region: DatabaseRegion)
}

/// The observers of one ``DatabasePool``'s file. The pool's writer tells them of its commits as
/// each completes, with the tables it wrote; a thread asks the writer, while no one else uses it,
/// whether another connection committed since (`PRAGMA data_version`, which a connection's own
/// commits leave as it is), another process or another connection of this one, whose tables it
/// cannot know: then every observer looks again. The thread runs while observers are registered.
///
/// `@unchecked Sendable`: every mutable property is touched only while `lock` is held.
///
/// See <https://www.sqlite.org/pragma.html#pragma_data_version>.
final class PoolObservers: @unchecked Sendable {
    /// How often the pool's file is checked for another connection's commits.
    static let pollInterval: Duration = .milliseconds(50)

    private let lock = NSLock()
    private var observers: [ObjectIdentifier: any PoolObserver] = [:]
    private var listensToWriter = false
    private var isPolling = false
    private var dataVersion: Int64?
    private var isStopped = false

    /// Starts telling `observer` of commits.
    func add(_ observer: any PoolObserver, pool: DatabasePool) throws {
        let listens = lock.withLock {
            observers[ObjectIdentifier(observer)] = observer
            return listensToWriter
        }
        if !listens {
            // Outside the lock: the writer's listener takes it, on the writer's thread.
            try pool.writeWithoutTransaction { db in
                let version = try db.fetchValue(Int64.self, "PRAGMA data_version")
                let installs = lock.withLock {
                    guard !listensToWriter else { return false }
                    listensToWriter = true
                    dataVersion = version
                    return true
                }
                guard installs else { return }
                _ = db.addCommitListener { [weak self] region in
                    self?.notify(region)
                    return self != nil
                }
            }
        }
        let startsPolling = lock.withLock {
            guard !isPolling, !isStopped, !observers.isEmpty else { return false }
            isPolling = true
            return true
        }
        if startsPolling {
            let thread = Thread { [weak self, weak pool] in
                while let self, let pool, self.pollOnce(pool) {}
            }
            thread.name = "OfflineStore observation"
            thread.start()
        }
    }

    func remove(_ observer: any PoolObserver) {
        lock.withLock { observers[ObjectIdentifier(observer)] = nil }
    }

    /// The pool closes: the thread ends.
    func stop() { lock.withLock { isStopped = true } }

    private func notify(_ region: DatabaseRegion) {
        let observers = lock.withLock { Array(self.observers.values) }
        for observer in observers { observer.databaseDidChange(region) }
    }

    /// Waits, then checks the file once; false when the thread should end (no observer left).
    private func pollOnce(_ pool: DatabasePool) -> Bool {
        Thread.sleep(forTimeInterval: Double(Self.pollInterval.components.attoseconds) / 1e18)
        let keepsPolling = lock.withLock {
            guard !observers.isEmpty, !isStopped else {
                isPolling = false
                return false
            }
            return true
        }
        guard keepsPolling else { return false }
        let version = try? pool.withIdleWriter { db in try db.fetchValue(Int64.self, "PRAGMA data_version") }
        guard let version = version ?? nil else { return true }
        let changed = lock.withLock {
            defer { dataVersion = version }
            return dataVersion != nil && dataVersion != version
        }
        if changed { notify(.everything) }
        return true
    }
}
