import CommandLineTool
import Foundation
import SyncServer

/// Where every command finds the server's storage: `--postgres URL` (or `OSTORE_POSTGRES_URL`)
/// for PostgreSQL, else `--data DIR` (or `OSTORE_SERVER_DATA`) for embedded SQLite. Options on
/// the command line win over the environment; giving both kinds on the command line is refused.
enum StorageLocation {
    static let options = [
        CommandOption(
            name: "--data", valueName: "DIR", help: "the server's SQLite data directory (default: $OSTORE_SERVER_DATA)"),
        CommandOption(
            name: "--postgres", valueName: "URL",
            help:
                "store in PostgreSQL instead (default: $OSTORE_POSTGRES_URL); keep the password in PGPASSWORD or "
                + "~/.pgpass, or the URL in the environment variable, not on the command line"),
    ]

    /// The storage the options name; nil after printing why when there is none. A PostgreSQL
    /// storage keeps at most `connections` connections open.
    static func open(_ arguments: ParsedArguments, command: String, connections: Int = 4) -> (any SyncStorage)? {
        let environment = ProcessInfo.processInfo.environment
        let data = arguments.values["--data"]
        let postgres = arguments.values["--postgres"]
        if data != nil && postgres != nil {
            Console.error("ostore-server \(command): give --data DIR or --postgres URL, not both")
            return nil
        }
        do {
            if let url = postgres ?? (data == nil ? environment["OSTORE_POSTGRES_URL"] : nil) {
                return try PostgresSyncStorage(url: url, connections: connections)
            }
            guard let path = data ?? environment["OSTORE_SERVER_DATA"] else {
                Console.error(
                    "ostore-server \(command): give the data directory with --data DIR (or OSTORE_SERVER_DATA), or a "
                        + "PostgreSQL database with --postgres URL (or OSTORE_POSTGRES_URL)")
                return nil
            }
            return try SQLiteSyncStorage(directory: URL(fileURLWithPath: path))
        } catch {
            Console.error("ostore-server \(command): \(error)")
            return nil
        }
    }
}
