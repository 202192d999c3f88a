import Foundation

/// A query observed in a ``DatabasePool``: its result now, then its new result after each commit
/// that may have changed it, each result told once (a result equal to the one before is not).
///
/// The tables the query depends on are found by SQLite while it prepares the query's statements
/// (its authorizer), each time it runs: a query that reads other tables depending on what it
/// found is followed through them. A commit of the pool's writer that wrote none of them runs
/// nothing. A commit of another connection to the file, in this process or another one, is
/// found within ``DatabasePool`` 's polling interval (50 ms) by `PRAGMA data_version`, whose
/// tables are unknown: the query runs again, and its result is told only if it changed.
///
/// The query runs on a connection of its own, opened as the pool's readers are, in a read
/// transaction; results are told on a queue of the observation's own, in order. A query that
/// throws ends the observation with its error.
///
/// ```swift
/// let titles = ValueObservation { db in try db.fetchAll(String.self, "SELECT title FROM reminders ORDER BY title") }
/// let cancellable = titles.start(in: pool, onError: { print("stopped:", $0) }) { titles in print(titles) }
/// for try await titles in titles.values(in: pool) { print(titles) }
/// ```
///
/// See <https://www.sqlite.org/c3ref/set_authorizer.html> and
/// <https://www.sqlite.org/pragma.html#pragma_data_version>.
public struct ValueObservation<Value: Sendable & Equatable>: Sendable {
    let fetch: @Sendable (Database) throws -> Value

    /// Observes the result of `fetch`.
    public init(tracking fetch: @escaping @Sendable (Database) throws -> Value) { self.fetch = fetch }

    /// Starts observing: `onChange` gets the first result, then each new one; `onError` the error
    /// that ended the observation (the query's, or opening its connection's). Keep the returned
    /// value and cancel it to stop (it stops when released too).
    ///
    /// ```swift
    /// let cancellable = observation.start(in: pool, onError: { _ in }) { value in print(value) }
    /// ```
    public func start(
        in pool: DatabasePool, onError: @escaping @Sendable (any Error) -> Void,
        onChange: @escaping @Sendable (Value) -> Void
    ) -> ObservationCancellable {
        let observer = QueryObserver(pool: pool, fetch: fetch, onChange: onChange, onError: onError)
        observer.start()
        return ObservationCancellable { observer.cancel() }
    }

    /// The results as an asynchronous sequence: the first result, then each new one; it ends
    /// with the error that ended the observation, and stops the observation when its iteration ends.
    ///
    /// ```swift
    /// for try await titles in observation.values(in: pool) { render(titles) }
    /// ```
    public func values(in pool: DatabasePool) -> AsyncThrowingStream<Value, any Error> {
        AsyncThrowingStream { continuation in
            let cancellable = start(
                in: pool, onError: { continuation.finish(throwing: $0) }, onChange: { continuation.yield($0) })
            continuation.onTermination = { _ in cancellable.cancel() }
        }
    }
}

/// Stops an observation when ``cancel()`` is called or when it is released.
///
/// ```swift
/// let cancellable = observation.start(in: pool, onError: { _ in }) { _ in }
/// cancellable.cancel()
/// ```
public final class ObservationCancellable: Sendable {
    private let onCancel: @Sendable () -> Void

    init(_ onCancel: @escaping @Sendable () -> Void) { self.onCancel = onCancel }

    deinit { onCancel() }

    /// Stops the observation: no result is told after this returns, except one being told on
    /// the observation's queue at this moment.
    public func cancel() { onCancel() }
}

/// One started observation: its connection, the tables its query read last, and whether it
/// must run again.
///
/// `@unchecked Sendable`: the properties under "guarded by lock" are touched only while `lock`
/// is held; `db` and `last` only on `queue`, which runs one block at a time.
final class QueryObserver<Value: Sendable & Equatable>: PoolObserver, @unchecked Sendable {
    private let queue = DispatchQueue(label: "OfflineStore.ValueObservation")
    private weak var pool: DatabasePool?
    private let path: String
    private let configuration: Configuration
    private let fetch: @Sendable (Database) throws -> Value
    private let onChange: @Sendable (Value) -> Void
    private let onError: @Sendable (any Error) -> Void

    private let lock = NSLock()
    // Guarded by lock.
    /// The tables the last run read; nil before the first.
    private var region: DatabaseRegion?
    /// A run is queued and has not started.
    private var isQueued = false
    /// A run has started: what is committed meanwhile may come after its snapshot.
    private var isRunning = false
    private var writtenWhileRunning = DatabaseRegion.empty
    private var isCancelled = false

    // On queue.
    private var db: Database?
    private var last: Value?

    init(
        pool: DatabasePool, fetch: @escaping @Sendable (Database) throws -> Value,
        onChange: @escaping @Sendable (Value) -> Void, onError: @escaping @Sendable (any Error) -> Void
    ) {
        self.pool = pool
        path = pool.path
        configuration = pool.readerConfiguration
        self.fetch = fetch
        self.onChange = onChange
        self.onError = onError
    }

    func start() {
        // Told of commits before the first run reads: a commit between the two would be missed.
        lock.withLock { isQueued = true }
        if let pool {
            do {
                try pool.observers.add(self, pool: pool)
            } catch {
                lock.withLock { isQueued = false }
                fail(error)
                return
            }
        }
        queue.async { self.run() }
    }

    func cancel() {
        let wasCancelled = lock.withLock {
            defer { isCancelled = true }
            return isCancelled
        }
        guard !wasCancelled else { return }
        pool?.observers.remove(self)
        queue.async {
            try? self.db?.close()
            self.db = nil
        }
    }

    func databaseDidChange(_ written: DatabaseRegion) {
        let runs = lock.withLock { () -> Bool in
            guard !isCancelled, !isQueued else { return false }
            if isRunning {
                writtenWhileRunning.formUnion(written)
                return false
            }
            guard (region ?? .everything).intersects(written) else { return false }
            isQueued = true
            return true
        }
        if runs { queue.async { self.run() } }
    }

    private func run() {
        let proceeds = lock.withLock { () -> Bool in
            isQueued = false
            guard !isCancelled else { return false }
            isRunning = true
            writtenWhileRunning = .empty
            return true
        }
        guard proceeds else { return }
        let result = Result { () throws -> (Value, DatabaseRegion) in
            let db = try self.db ?? Database(path: path, configuration: configuration)
            self.db = db
            return try db.transaction(.deferred) { db in try db.collectingReads { try fetch(db) } }
        }
        switch result {
        case .success(let (value, read)):
            let again = lock.withLock { () -> Bool in
                isRunning = false
                region = read
                guard !isCancelled, writtenWhileRunning.intersects(read), !isQueued else { return false }
                isQueued = true
                return true
            }
            if again { queue.async { self.run() } }
            guard value != last, !lock.withLock({ isCancelled }) else { return }
            last = value
            onChange(value)
        case .failure(let error):
            lock.withLock { isRunning = false }
            fail(error)
        }
    }

    private func fail(_ error: any Error) {
        guard !lock.withLock({ isCancelled }) else { return }
        cancel()
        onError(error)
    }
}
