import Foundation
import OfflineStoreSQLite

extension SQLiteSyncStorage {
    /// Puts a backup of `server.sqlite` in place in `directory` and gives every dataset a new
    /// incarnation (``renewIncarnations(of:)``), so the pull cursors devices hold are refused and each
    /// device downloads again, while its hello tells it which of its pushes the backup lacks. The
    /// server must be stopped. The backup is copied and checked first; nothing is replaced when it is
    /// not a readable server database. With `folds` false (what `ostore-server restore` passes: it
    /// ends at once) the storage it returns merges nothing into the current state; the server started
    /// next does (see ``init(directory:folds:)``).
    ///
    /// ```swift
    /// let storage = try SQLiteSyncStorage.restore(
    ///     from: URL(fileURLWithPath: "/var/backups/ostore-server.sqlite"),
    ///     into: URL(fileURLWithPath: "/var/lib/ostore"))
    /// ```
    ///
    /// See <https://www.sqlite.org/backup.html> and <https://www.sqlite.org/pragma.html#pragma_integrity_check>.
    public static func restore(from backup: URL, into directory: URL, folds: Bool = true) throws(ServerError)
        -> SQLiteSyncStorage
    {
        let target = directory.appendingPathComponent(fileName).path
        let staged = target + ".restoring"
        let files = FileManager.default
        do {
            try files.createDirectory(at: directory, withIntermediateDirectories: true)
            try? files.removeItem(atPath: staged)
            try files.copyItem(atPath: backup.path, toPath: staged)
            let db = try Database(path: staged)
            defer { try? db.close() }
            _ = try db.fetchValue(Int.self, "SELECT count(*) FROM server_datasets")
            let integrity = try db.fetchValue(String.self, "PRAGMA integrity_check")
            guard integrity == "ok" else {
                throw ServerError(.storage, "integrity_check says \(integrity ?? "nothing")")
            }
        } catch {
            try? files.removeItem(atPath: staged)
            throw ServerError(
                .invalidArgument,
                "\(backup.path) is not a readable server database backup: \(error); nothing was replaced",
                fix:
                    "give a copy of server.sqlite made with sqlite3's .backup, or one copied while the server was stopped"
            )
        }
        do {
            // The old file's WAL belongs to the old file: left beside the backup, SQLite would replay it into it.
            for suffix in ["-wal", "-shm"] where files.fileExists(atPath: target + suffix) {
                try files.removeItem(atPath: target + suffix)
            }
            // rename(2) replaces the old file in one step: there is always a whole database in place.
            guard rename(staged, target) == 0 else {
                throw ServerError(.storage, "rename failed: \(String(cString: strerror(errno)))")
            }
        } catch {
            throw ServerError(
                .storage, "cannot put the backup in place at \(target): \(error)",
                fix: "check the data directory's permissions and run the restore again")
        }
        let storage = try SQLiteSyncStorage(directory: directory, folds: folds)
        try storage.renewIncarnations()
        try storage.recordServedSerials()
        return storage
    }
}
