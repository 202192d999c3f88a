import Foundation
import OfflineStore

/// Copies the WAL back into `server.sqlite` on a thread and connection of its own, so the writer
/// does not. SQLite's automatic checkpoint runs on the connection that commits, right after the
/// commit: with pushes that is the group-commit writer, which then writes and fsyncs into the
/// database file about as many bytes again as it wrote to the WAL (10 of the 18 KiB written per
/// pushed change go to the WAL) while the pushes waiting for it cannot be written. A PASSIVE
/// checkpoint needs no write lock, so here it runs beside the next group's transaction, on the
/// other core.
///
/// Durability does not depend on it: a push is acknowledged once the WAL holding it is fsynced
/// (`synchronous = FULL`); a checkpoint only moves committed pages, and fsyncs the WAL before and
/// the database after. The writer keeps an automatic checkpoint at a larger threshold as a bound
/// on the WAL's size: under a steady stream of commits this thread is always one commit behind,
/// so the WAL would never be wholly copied when a transaction starts and could never restart;
/// the writer's own checkpoint then finds little left to copy, and the WAL starts over.
///
/// ```swift
/// let checkpointer = BackgroundCheckpointer(path: path, configuration: configuration)
/// checkpointer.walGrew()  // after every commit
/// ```
///
/// See <https://www.sqlite.org/c3ref/wal_checkpoint_v2.html> and
/// <https://www.sqlite.org/wal.html#automatic_checkpoint>.
final class BackgroundCheckpointer: Sendable {
    /// The writer's own automatic checkpoint threshold, in pages (SQLite's default is 1,000).
    static let writerAutoCheckpointPages = 16_384

    private let state = State()

    /// Starts the thread; it opens its connection to `path` itself (a `Database` belongs to one
    /// thread). When that fails, nothing is checkpointed here and the writer's threshold still
    /// bounds the WAL.
    init(path: String, configuration: Configuration) {
        let state = self.state
        let thread = Thread {
            defer { state.finished.signal() }
            guard let db = try? Database(path: path, configuration: configuration) else { return }
            defer { try? db.close() }
            while state.nextRound() {
                // A failed round (the file busy, a disk error) is left to the next commit's round
                // or to the writer's automatic checkpoint; the commits themselves are unaffected.
                try? db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
            }
        }
        thread.name = "ostore-checkpoint"
        thread.start()
    }

    /// Waits for the thread to close its connection: a connection closed after the file was
    /// replaced (`ostore-server restore` in the same process) could remove the new file's WAL.
    deinit {
        state.stop()
        state.finished.wait()
    }

    /// Asks for a checkpoint soon: called after every commit. Commits that arrive while one runs
    /// are covered by one more round.
    func walGrew() {
        state.condition.lock()
        state.pending = true
        state.condition.signal()
        state.condition.unlock()
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

        func stop() {
            condition.lock()
            stopped = true
            condition.signal()
            condition.unlock()
        }
    }
}
