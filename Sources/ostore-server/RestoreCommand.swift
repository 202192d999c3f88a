import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server restore BACKUP`: puts a backup of `server.sqlite` in place and gives every
/// dataset a new incarnation, so devices notice the restore instead of silently missing changes.
enum RestoreCommand: Command {
    static let name = "restore"
    static let synopsis = "BACKUP [--data DIR]"
    static let summary = "Restore server.sqlite from a backup; devices then download again and re-push what it lacks."
    static let options = [DataDirectory.option]
    static let details = """
        Stop the server first. BACKUP is a copy of server.sqlite (`sqlite3 server.sqlite ".backup FILE"`);
        it is copied, checked, and put in place of the data directory's server.sqlite, whose -wal and
        -shm files are removed. Then every dataset gets a new incarnation: the pull cursors devices hold
        were issued before and are refused (invalid_cursor), so each device downloads the dataset again
        on its next sync, and each device's hello learns how far the restored server has its pushes and
        pushes again what the backup lacks. The backup file itself is left unchanged.

        exit status: 0 restored, 2 usage error, unreadable backup or storage error (nothing replaced)
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard arguments.positionals.count == 1 else {
            Console.error("usage: ostore-server restore \(synopsis)")
            return .failure
        }
        guard let directory = DataDirectory.path(arguments, command: name) else { return .failure }
        let backup = arguments.positionals[0]
        do {
            let storage = try SQLiteSyncStorage.restore(
                from: URL(fileURLWithPath: backup), into: URL(fileURLWithPath: directory))
            Console.output(
                "restored \(storage.path) from \(backup); \(try storage.datasets().count) dataset(s) have a new "
                    + "incarnation: devices download them again and push again what the backup lacks")
            return .success
        } catch {
            Console.error("ostore-server restore: \(error)")
            return .failure
        }
    }
}
