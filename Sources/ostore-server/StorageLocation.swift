import CommandLineTool
import Foundation
import SyncServer

/// Where every command finds the server's storage: `--postgres URL` (or `OSTORE_POSTGRES_URL`)
/// for PostgreSQL, else `--data DIR` (or `OSTORE_SERVER_DATA`) for embedded SQLite. Options on
/// the command line win over the environment; giving both kinds on the command line is refused.
enum StorageLocation {
    case sqlite(directory: URL)
    case postgres(url: String)

    static let dataOption = CommandOption(
        name: "--data", valueName: "DIR", help: "the server's SQLite data directory (default: $OSTORE_SERVER_DATA)")
    static let postgresOption = CommandOption(
        name: "--postgres", valueName: "URL",
        help:
            "store in PostgreSQL instead (default: $OSTORE_POSTGRES_URL); keep the password in PGPASSWORD or "
            + "~/.pgpass, or the URL in the environment variable, not on the command line")
    static let options = [dataOption, postgresOption]

    /// The location the options name; nil after printing why when they name none, or both.
    init?(_ arguments: ParsedArguments, command: String) {
        let environment = ProcessInfo.processInfo.environment
        let data = arguments.values["--data"]
        let postgres = arguments.values["--postgres"]
        if data != nil && postgres != nil {
            Console.error("ostore-server \(command): give --data DIR or --postgres URL, not both")
            return nil
        }
        if let url = postgres ?? (data == nil ? environment["OSTORE_POSTGRES_URL"] : nil) {
            self = .postgres(url: url)
        } else if let path = data ?? environment["OSTORE_SERVER_DATA"] {
            self = .sqlite(directory: URL(fileURLWithPath: path))
        } else {
            Console.error(
                "ostore-server \(command): give the data directory with --data DIR (or OSTORE_SERVER_DATA), or a "
                    + "PostgreSQL database with --postgres URL (or OSTORE_POSTGRES_URL)")
            return nil
        }
    }

    /// Opens the storage here; a PostgreSQL storage keeps at most `connections` connections open.
    /// Only `serve` folds pushed changes into a data directory's current rows (`folds`): an
    /// administration command leaves that to the server.
    func open(connections: Int = 4, folds: Bool = false) throws(ServerError) -> any SyncStorage {
        switch self {
        case .sqlite(let directory): try SQLiteSyncStorage(directory: directory, folds: folds)
        case .postgres(let url): try PostgresSyncStorage(url: url, connections: connections)
        }
    }

    /// The storage the options name; nil after printing why when there is none.
    static func open(_ arguments: ParsedArguments, command: String, connections: Int = 4, folds: Bool = false)
        -> (any SyncStorage)?
    {
        guard let location = StorageLocation(arguments, command: command) else { return nil }
        do {
            return try location.open(connections: connections, folds: folds)
        } catch {
            Console.error("ostore-server \(command): \(error)")
            return nil
        }
    }
}
