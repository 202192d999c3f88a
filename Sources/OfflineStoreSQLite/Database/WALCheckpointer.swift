import Foundation
import Synchronization

/// Copies a connection's write-ahead logs back into their database files on a thread and
/// connection of its own, for as long as a run of large write transactions lasts (a sync's pull),
/// so the connection that commits does not. SQLite's automatic checkpoint runs on the committing
/// connection, right after its commit, and copies about as many pages again as the transaction
/// wrote to the WAL, with an fsync of each file: while a pull applies its pages, that would be
/// the applying thread's time, which holds the write lock.
/// A PASSIVE checkpoint needs no write lock, so here it runs beside the next transaction, on
/// another core.
///
/// Made by ``Database/withBackgroundCheckpoints(walBoundPages:_:)``, which raises the connection's
/// automatic checkpoint threshold while the thread runs, and puts it back after. The thread lives
/// only that long: before that method returns it is stopped and waited for until it has closed its
/// connection (its last act; the OS thread ends right after), so a library using it leaves no thread
/// behind. Nothing depends on it for durability: a checkpoint only moves
/// committed pages. The raised threshold bounds the WAL when the thread falls behind (each
/// round is one commit behind; a WAL starts over only when a transaction begins with it wholly
/// copied).
///
/// See <https://www.sqlite.org/c3ref/wal_checkpoint_v2.html> and
/// <https://www.sqlite.org/wal.html#automatic_checkpoint>.
public final class WALCheckpointer: Sendable {
    /// The thread's name, as `/proc/self/task/*/comm` shows it: `ostore-ckpt` and a number that
    /// tells the threads of one process apart (Linux keeps 15 bytes of a name).
    public let threadName: String

    private let state = State()
    private static let started = Atomic(0)

    /// Starts the thread, which opens its own connection to `files` (schema name and path, `main`
    /// first) with `configuration`: a `Database` belongs to one thread. When that fails, nothing is
    /// checkpointed here and the committing connection's automatic checkpoint still bounds the WAL.
    /// The server's writer uses one for as long as it runs (`SQLiteSyncStorage`).
    package init(files: [(name: String, path: String)], configuration: Configuration = checkpointing) {
        let number = Self.started.wrappingAdd(1, ordering: .relaxed).newValue % 10_000
        let name = "ostore-ckpt\(number)"
        threadName = name
        let state = self.state
        let thread = Thread {
            defer { state.finished.signal() }
            // Given before the start, Foundation keeps the name to itself on Linux; set on the
            // running thread, it gives it to the OS.
            Thread.current.name = name
            guard let db = Self.open(files, configuration) else { return }
            defer { try? db.close() }
            while state.nextRound() {
                // A failed round (the files busy, a disk error) is left to the next one or to the
                // committing connection's automatic checkpoint; the commits are unaffected.
                try? db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
            }
        }
        thread.start()
    }

    /// The checkpoint reads the WAL and writes the file directly, past the page cache.
    package static let checkpointing: Configuration = {
        var configuration = Configuration()
        configuration.pageCacheKiB = 256
        return configuration
    }()

    private static func open(_ files: [(name: String, path: String)], _ configuration: Configuration) -> Database? {
        guard let main = files.first else { return nil }
        guard let db = try? Database(path: main.path, configuration: configuration) else { return nil }
        for file in files.dropFirst() {
            guard (try? db.execute("ATTACH DATABASE \(file.path) AS \(identifier: file.name)")) != nil else {
                try? db.close()
                return nil
            }
        }
        return db
    }

    deinit { stop() }

    /// Asks for a checkpoint soon: called after every commit. Commits that arrive while one runs
    /// are covered by one more round.
    public func walGrew() {
        state.condition.lock()
        state.pending = true
        state.condition.signal()
        state.condition.unlock()
    }

    /// Stops the thread (after the round in progress) and waits until it has closed its connection.
    public func stop() {
        state.condition.lock()
        let running = !state.stopped
        state.stopped = true
        state.condition.signal()
        state.condition.unlock()
        if running { state.finished.wait() }
    }

    /// Whether a round is asked for and the thread still runs.
    ///
    /// `@unchecked Sendable` is safe because `pending` and `stopped` are only read or written
    /// while `condition` is locked.
    private final class State: @unchecked Sendable {
        let condition = NSCondition()
        var pending = false
        var stopped = false
        /// Signalled once when the thread ends.
        let finished = DispatchSemaphore(value: 0)

        /// Waits for the next round; false once stopped.
        func nextRound() -> Bool {
            condition.lock()
            defer { condition.unlock() }
            while !pending && !stopped { condition.wait() }
            pending = false
            return !stopped
        }
    }
}

extension Database {
    /// Runs `body` with this connection's checkpoints moved to a ``WALCheckpointer`` thread, which
    /// `body` prods after each of its commits (``WALCheckpointer/walGrew()``). While it runs, the
    /// connection's own automatic checkpoint waits for `walBoundPages` pages in a WAL (not
    /// SQLite's 1,000), a bound for when the thread falls behind; afterwards the thread is stopped
    /// and waited for, and the threshold put back. A connection that is not in WAL mode on a file, or whose
    /// automatic checkpoint is off or already higher, runs `body` as it is, without a checkpointer.
    ///
    /// ```swift
    /// try db.withBackgroundCheckpoints { checkpointer in
    ///     for page in pages {
    ///         try db.transaction(.immediate) { db in try write(page, db) }
    ///         checkpointer?.walGrew()
    ///     }
    /// }
    /// ```
    ///
    /// See <https://www.sqlite.org/pragma.html#pragma_wal_autocheckpoint>.
    public func withBackgroundCheckpoints<Result, Failure: Error>(
        walBoundPages: Int = 4_096, _ body: (WALCheckpointer?) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard let previous = try? backgroundCheckpointThreshold(walBoundPages),
            let files = try? checkpointedFiles()
        else { return try body(nil) }
        let checkpointer = WALCheckpointer(files: files)
        try? execute(sql: "PRAGMA wal_autocheckpoint = \(walBoundPages)")
        defer {
            checkpointer.stop()
            try? execute(sql: "PRAGMA wal_autocheckpoint = \(previous)")
        }
        return try body(checkpointer)
    }

    /// The automatic checkpoint threshold to put back afterwards, or nil when checkpoints stay
    /// where they are.
    private func backgroundCheckpointThreshold(_ bound: Int) throws -> Int? {
        guard !isInMemory, !configuration.readonly,
            try fetchValue(String.self, "PRAGMA main.journal_mode")?.lowercased() == "wal",
            let threshold = try fetchValue(Int.self, "PRAGMA wal_autocheckpoint"), threshold > 0, threshold < bound
        else { return nil }
        return threshold
    }

    /// `main` and every attached file database (`temp` and in-memory ones have no WAL).
    private func checkpointedFiles() throws -> [(name: String, path: String)]? {
        let rows = try fetchAll("SELECT name, file FROM pragma_database_list ORDER BY seq")
        var files: [(name: String, path: String)] = []
        for row in rows {
            let name: String = try row.decode(at: 0)
            let path: String = try row.decode(String?.self, at: 1) ?? ""
            guard name != "temp", !path.isEmpty else { continue }
            files.append((name, path))
        }
        guard files.first?.name == "main" else { return nil }
        return files
    }
}
