import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server restore BACKUP --data DIR`: puts a backup of `server.sqlite` in place and gives
/// every dataset a new incarnation, so devices notice the restore instead of silently missing
/// changes. `ostore-server restore --postgres URL`: the same renewal on a PostgreSQL database the
/// operator has just restored with `pg_restore`.
enum RestoreCommand: Command {
    static let name = "restore"
    static let synopsis = "BACKUP [--data DIR] | --postgres URL"
    static let summary =
        "Restore server.sqlite from a backup, or mark a restored PostgreSQL database as restored; devices then "
        + "download again and re-push what it lacks."
    static let options = StorageLocation.options
    static let details = """
        Stop the server first. BACKUP is a copy of server.sqlite (`sqlite3 server.sqlite ".backup FILE"`);
        it is copied, checked, and put in place of the data directory's server.sqlite, whose -wal and
        -shm files are removed. Then every dataset gets a new incarnation: the pull cursors devices hold
        were issued before and are refused (invalid_cursor), so each device downloads the dataset again
        on its next sync, and each device's hello learns how far the restored server has its pushes and
        pushes again what the backup lacks. The backup file itself is left unchanged. The data
        directory's state.sqlite (the merged rows, derived from the log) is kept when it was folded
        from the restored log, and folded again from it otherwise, when the server starts.

        With --postgres URL (or OSTORE_POSTGRES_URL) and no BACKUP, it gives every dataset of the
        PostgreSQL database a new incarnation: run it after `pg_restore` has put a dump back and
        before any server serves the database again (docs/POSTGRES.md).

        exit status: 0 restored, 2 usage error, unreadable backup or storage error (nothing replaced)
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard let location = StorageLocation(arguments, command: name) else { return .failure }
        switch location {
        case .sqlite(let directory):
            guard arguments.positionals.count == 1 else {
                Console.error("usage: ostore-server restore \(synopsis)")
                return .failure
            }
            let backup = arguments.positionals[0]
            do {
                // Only `serve` folds: this command ends at once (see StorageLocation.open).
                let storage = try SQLiteSyncStorage.restore(
                    from: URL(fileURLWithPath: backup), into: directory, folds: false)
                Console.output(
                    "restored \(storage.path) from \(backup); \(try storage.datasets().count) dataset(s) have a new "
                        + "incarnation: devices download them again and push again what the backup lacks")
                return .success
            } catch {
                Console.error("ostore-server restore: \(error)")
                return .failure
            }
        case .postgres(let url):
            guard arguments.positionals.isEmpty else {
                Console.error(
                    "ostore-server restore: with --postgres, restore the dump with pg_restore first, then run "
                        + "`ostore-server restore --postgres URL` without a BACKUP")
                return .failure
            }
            do {
                let renewed = try PostgresSyncStorage(url: url, connections: 1).renewIncarnations()
                Console.output(
                    "\(renewed) dataset(s) have a new incarnation in the PostgreSQL database: devices download them "
                        + "again and push again what the restored database lacks")
                return .success
            } catch {
                Console.error("ostore-server restore: \(error)")
                return .failure
            }
        }
    }
}
