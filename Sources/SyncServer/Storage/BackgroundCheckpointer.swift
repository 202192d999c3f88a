import Foundation
import OfflineStoreSQLite

/// Copies the WAL back into `server.sqlite` on a thread and connection of its own, so the writer
/// does not. SQLite's automatic checkpoint runs on the connection that commits, right after the
/// commit: with pushes that is the group-commit writer, which then writes and fsyncs into the
/// database file about as many bytes again as it wrote to the WAL while the pushes waiting for
/// it cannot be written. A PASSIVE
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
/// The thread is a ``WALCheckpointer`` (the same one a client's pull uses), started with the writer
/// and stopped when the storage goes: its deinit waits for the thread to close its connection, as
/// a connection closed after the file was replaced (`ostore-server restore` in the same process)
/// could remove the new file's WAL.
///
/// ```swift
/// let checkpointer = BackgroundCheckpointer.start(path: path, configuration: configuration)
/// checkpointer.walGrew()  // after every commit
/// ```
///
/// See <https://www.sqlite.org/c3ref/wal_checkpoint_v2.html> and
/// <https://www.sqlite.org/wal.html#automatic_checkpoint>.
enum BackgroundCheckpointer {
    /// The writer's own automatic checkpoint threshold, in pages (SQLite's default is 1,000).
    static let writerAutoCheckpointPages = 16_384

    /// Starts the thread; it opens its connection to `path` itself. When that fails, nothing is
    /// checkpointed there and the writer's threshold still bounds the WAL.
    static func start(path: String, configuration: Configuration) -> WALCheckpointer {
        WALCheckpointer(files: [(name: "main", path: path)], configuration: configuration)
    }
}
