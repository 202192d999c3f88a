import Foundation
import OfflineStoreSQLite

/// Group commit: pushes that arrive while another is being written wait, then go to disk
/// together in the next write transaction, each inside its own savepoint. With
/// `synchronous = FULL` every commit waits for an fsync of the WAL (milliseconds on most disks),
/// so one commit per push would cap a server at a few hundred pushes per second
/// however fast the rest is; sharing the commit shares that wait.
///
/// What each push is promised does not change: its work runs all or nothing (a savepoint rolled
/// back on error, without touching the others), in arrival order, and its result is handed back
/// only after the transaction holding it has committed. When the commit fails, every push of
/// the group fails and none is acknowledged.
///
/// ```swift
/// let commits = GroupCommit(pool: pool)
/// let high = try commits.write { db in try storeOneBatch(db) }  // returns once committed
/// ```
///
/// See <https://www.sqlite.org/lang_savepoint.html>.
final class GroupCommit: Sendable {
    private let pool: DatabasePool
    /// Runs after each group's transaction has committed, before its pushes are answered.
    private let afterCommit: @Sendable () -> Void
    private let queue = Queue()

    init(pool: DatabasePool, afterCommit: @escaping @Sendable () -> Void = {}) {
        self.pool = pool
        self.afterCommit = afterCommit
    }

    /// Runs `work` in a savepoint of the next group's transaction and returns its result once
    /// that transaction has committed.
    func write<Output: Sendable>(_ work: @escaping @Sendable (Database) throws -> Output) throws -> Output {
        let ticket = Ticket(work: { db in try work(db) })
        queue.condition.lock()
        queue.waiting.append(ticket)
        while ticket.result == nil {
            if queue.isWriting {
                queue.condition.wait()
                continue
            }
            // No group is being written: this thread writes every push waiting, its own included.
            queue.isWriting = true
            let group = queue.waiting
            queue.waiting = []
            queue.condition.unlock()
            let results = commit(group)
            afterCommit()
            queue.condition.lock()
            for (ticket, result) in zip(group, results) { ticket.result = result }
            queue.isWriting = false
            queue.condition.broadcast()
        }
        let result = ticket.result!
        queue.condition.unlock()
        // The ticket ran this call's own `work`, so its value is an `Output`.
        return try result.get() as! Output
    }

    /// One transaction for the whole group; the results only stand if it commits.
    private func commit(_ group: [Ticket]) -> [Result<any Sendable, any Error>] {
        do {
            return try pool.write { db in
                var results: [Result<any Sendable, any Error>] = []
                for ticket in group {
                    do {
                        results.append(.success(try db.savepoint { db in try ticket.work(db) }))
                    } catch {
                        // A failure SQLite answered by rolling back the whole transaction (a full
                        // disk, an I/O error) takes every push of the group with it.
                        guard db.isInsideTransaction else { throw error }
                        results.append(.failure(error))
                    }
                }
                return results
            }
        } catch {
            return group.map { _ in .failure(error) }
        }
    }

    /// One push waiting for its group to commit.
    ///
    /// `@unchecked Sendable` is safe because `result` is only read or written while
    /// `Queue.condition` is locked, and `work` is immutable and `@Sendable`.
    private final class Ticket: @unchecked Sendable {
        let work: @Sendable (Database) throws -> any Sendable
        var result: Result<any Sendable, any Error>?

        init(work: @escaping @Sendable (Database) throws -> any Sendable) {
            self.work = work
        }
    }

    /// The pushes waiting, and whether a group is being written.
    ///
    /// `@unchecked Sendable` is safe because `waiting` and `isWriting` are only
    /// read or written while `condition` is locked.
    private final class Queue: @unchecked Sendable {
        let condition = NSCondition()
        var waiting: [Ticket] = []
        var isWriting = false
    }
}
