import Dispatch
import Foundation

/// The store's connections to one database file: one writer, used by one
/// caller at a time, and a small pool of readers that run concurrently with
/// it (WAL mode lets readers see the last committed state while a write is in
/// progress, without waiting for it).
///
/// Every method can be called from any thread; the async variants run the
/// work off the Swift concurrency thread pool, so a long write never blocks it.
///
/// ```swift
/// let pool = try DatabasePool(path: "/tmp/reminders.sqlite")
/// try pool.write { db in
///     try db.execute("INSERT INTO reminders (id, title) VALUES (\(UUID().uuidString), \("Milk"))")
/// }
/// let count = try await pool.read { db in
///     try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") ?? 0
/// }
/// ```
///
/// Calling `write` from inside a `write` (or `read` inside `read`) on the
/// same thread is a misuse error, not a deadlock: use the `Database` you were given.
///
/// See <https://www.sqlite.org/wal.html>.
public final class DatabasePool: Sendable {
    public let path: String
    private let writer: SerializedConnection
    private let readers: ReaderConnections
    /// How a reader is opened: the app's preparation, then `query_only`.
    package let readerConfiguration: Configuration
    /// The ``ValueObservation``s started in this pool.
    let observers = PoolObservers()

    /// Opens the writer now (creating the file and switching it to WAL) and readers on demand.
    public init(
        path: String, configuration: Configuration = Configuration(), maximumReaderCount: Int = 4
    ) throws(DatabaseError) {
        guard !path.isEmpty, path != ":memory:" else {
            throw .misuse("DatabasePool needs a file: WAL readers cannot share a private in-memory database")
        }
        guard configuration.journalMode == .wal, !configuration.readonly else {
            throw .misuse("DatabasePool needs a writable database in WAL mode for concurrent readers")
        }
        self.path = path
        writer = SerializedConnection(try Database(path: path, configuration: configuration))
        var readerConfiguration = configuration
        let userPreparation = configuration.prepareDatabase
        readerConfiguration.prepareDatabase = { db in
            // The app's preparation first: it may create TEMP objects, which query_only forbids.
            try userPreparation?(db)
            try db.execute(sql: "PRAGMA query_only = 1")
        }
        self.readerConfiguration = readerConfiguration
        readers = ReaderConnections(
            path: path, configuration: readerConfiguration, maximumCount: max(1, maximumReaderCount))
    }

    // MARK: Writing

    /// Runs `body` on the writer inside an IMMEDIATE transaction: commit on return, rollback on throw.
    /// `Output` is `Sendable` so nothing tied to the connection (a `Database`, `Row`,
    /// cursor or `Statement`) can leave the lock.
    public func write<Output: Sendable>(_ body: (Database) throws -> Output) throws -> Output {
        try writer.withConnection { db in try db.transaction(.immediate, body) }
    }

    /// Runs `body` on the writer without opening a transaction (for VACUUM, pragmas, or
    /// transactions the body manages itself). A transaction the body leaves open is rolled
    /// back and reported as a misuse error, so it cannot swallow later writes.
    public func writeWithoutTransaction<Output: Sendable>(_ body: (Database) throws -> Output) throws -> Output {
        try writer.withConnection { db in
            let output: Output
            do {
                output = try body(db)
            } catch {
                db.rollBackOpenTransaction(reason: "\(error)")
                throw error
            }
            if db.isInsideTransaction {
                db.rollBackOpenTransaction(reason: "writeWithoutTransaction left a transaction open")
                throw DatabaseError.misuse(
                    "writeWithoutTransaction's body left a transaction open; it was rolled back. Commit it in the body, or use write(_:)"
                )
            }
            return output
        }
    }

    /// Async ``write(_:)``: the work runs on a dispatch queue, not on the caller's executor.
    public func write<Output: Sendable>(_ body: @escaping @Sendable (Database) throws -> Output) async throws
        -> Output
    {
        try await offload { try self.write(body) }
    }

    /// Async ``writeWithoutTransaction(_:)``.
    public func writeWithoutTransaction<Output: Sendable>(
        _ body: @escaping @Sendable (Database) throws -> Output
    ) async throws -> Output {
        try await offload { try self.writeWithoutTransaction(body) }
    }

    // MARK: Reading

    /// Runs `body` on a reader inside a read transaction, so every query sees
    /// one consistent committed state. Blocks only when all readers are busy.
    public func read<Output: Sendable>(_ body: (Database) throws -> Output) throws -> Output {
        try readers.withConnection { db in
            try db.transaction(.deferred, body)
        }
    }

    /// Async ``read(_:)``.
    public func read<Output: Sendable>(_ body: @escaping @Sendable (Database) throws -> Output) async throws
        -> Output
    {
        try await offload { try self.read(body) }
    }

    /// Runs `body` on the writer without a transaction, for the library's own steps, whose
    /// results may be tied to the connection (the caller keeps them on its side).
    package func withWriter<Output>(_ body: (Database) throws -> Output) throws -> Output {
        try writer.withConnection(body)
    }

    /// Runs `body` on a reader without a transaction (it opens its own), for the library's own
    /// reads, whose results may be tied to the connection.
    package func withReader<Output>(_ body: (Database) throws -> Output) throws -> Output {
        try readers.withConnection(body)
    }

    /// Runs `body` on the writer when no one is using it, without a transaction; nil when it is busy.
    func withIdleWriter<Output>(_ body: (Database) throws -> Output) rethrows -> Output? {
        try writer.withConnectionIfIdle(body)
    }

    /// Closes every connection; later calls fail with a misuse error.
    public func close() throws {
        observers.stop()
        try readers.close()
        try writer.close()
    }

    private func offload<Output: Sendable>(_ work: @escaping @Sendable () throws -> Output) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}

/// The current thread's identity, to catch re-entrant use that would deadlock.
private func currentThreadID() -> pthread_t { pthread_self() }

/// The writer connection behind a lock.
///
/// `@unchecked Sendable` is safe because `connection` is only read or used
/// while `lock` is held (`withConnection`, `close`), so no two threads touch
/// the non-Sendable `Database` at once; `owner` is likewise guarded by `lock`
/// when written, and read only by the thread that holds it or to detect that it does.
private final class SerializedConnection: @unchecked Sendable {
    private let lock = NSLock()
    private var connection: Database?
    private let ownerLock = NSLock()
    private var owner: pthread_t?

    init(_ connection: Database) {
        self.connection = connection
    }

    func withConnection<Output>(_ body: (Database) throws -> Output) throws -> Output {
        let me = currentThreadID()
        let reentrant = ownerLock.withLock { owner.map { pthread_equal($0, me) != 0 } ?? false }
        if reentrant {
            throw DatabaseError.misuse("write called inside write on the same thread: use the Database you were given")
        }
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { throw DatabaseError.misuse("the DatabasePool was closed") }
        ownerLock.withLock { owner = me }
        defer { ownerLock.withLock { owner = nil } }
        return try body(connection)
    }

    /// `body` with the connection when its lock is free (and not held by this thread); nil otherwise.
    func withConnectionIfIdle<Output>(_ body: (Database) throws -> Output) rethrows -> Output? {
        guard lock.try() else { return nil }
        defer { lock.unlock() }
        guard let connection else { return nil }
        let me = currentThreadID()
        ownerLock.withLock { owner = me }
        defer { ownerLock.withLock { owner = nil } }
        return try body(connection)
    }

    func close() throws {
        let me = currentThreadID()
        if ownerLock.withLock({ owner.map { pthread_equal($0, me) != 0 } ?? false }) {
            throw DatabaseError.misuse(
                "close() called inside write on the same thread: close the pool after the write returns")
        }
        lock.lock()
        defer { lock.unlock() }
        try connection?.close()
        connection = nil
    }
}

/// Reader connections, opened lazily up to a maximum and handed out one caller at a time.
///
/// `@unchecked Sendable` is safe because `idle`, `openCount`, `busyThreads` and
/// `isClosed` are only touched while `condition` is locked, and a `Database`
/// taken from `idle` is used by exactly one thread until it is put back.
private final class ReaderConnections: @unchecked Sendable {
    private let condition = NSCondition()
    private var idle: [Database] = []
    private var openCount = 0
    private var busyThreads: [pthread_t] = []
    private var isClosed = false
    private let path: String
    private let configuration: Configuration
    private let maximumCount: Int

    init(path: String, configuration: Configuration, maximumCount: Int) {
        self.path = path
        self.configuration = configuration
        self.maximumCount = maximumCount
    }

    func withConnection<Output>(_ body: (Database) throws -> Output) throws -> Output {
        let connection = try checkOut()
        defer { checkIn(connection) }
        return try body(connection)
    }

    private func checkOut() throws -> Database {
        let me = currentThreadID()
        condition.lock()
        defer { condition.unlock() }
        if busyThreads.contains(where: { pthread_equal($0, me) != 0 }) {
            throw DatabaseError.misuse("read called inside read on the same thread: use the Database you were given")
        }
        while true {
            if isClosed { throw DatabaseError.misuse("the DatabasePool was closed") }
            if let connection = idle.popLast() {
                busyThreads.append(me)
                return connection
            }
            if openCount < maximumCount {
                openCount += 1
                do {
                    let connection = try Database(path: path, configuration: configuration)
                    busyThreads.append(me)
                    return connection
                } catch {
                    openCount -= 1
                    throw error
                }
            }
            condition.wait()
        }
    }

    private func checkIn(_ connection: Database) {
        let me = currentThreadID()
        condition.lock()
        defer { condition.unlock() }
        if let index = busyThreads.firstIndex(where: { pthread_equal($0, me) != 0 }) {
            busyThreads.remove(at: index)
        }
        if !connection.isOpen {
            openCount -= 1  // the body closed it: open a fresh one next time
        } else if isClosed {
            try? connection.close()
        } else {
            idle.append(connection)
        }
        condition.signal()
    }

    func close() throws {
        condition.lock()
        defer { condition.unlock() }
        isClosed = true
        for connection in idle { try connection.close() }
        idle.removeAll()
        condition.broadcast()
    }
}
