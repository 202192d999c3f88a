import CommandLineTool
import Foundation
import SyncServer

/// The `--data DIR` every command takes (or `OSTORE_SERVER_DATA`), opened as the server's storage.
enum DataDirectory {
    static let option = CommandOption(
        name: "--data", valueName: "DIR", help: "the server's data directory (default: $OSTORE_SERVER_DATA)")

    /// The directory named by `--data` or `OSTORE_SERVER_DATA`; nil (with a message) when neither is.
    static func path(_ arguments: ParsedArguments, command: String) -> String? {
        guard let path = arguments.values["--data"] ?? ProcessInfo.processInfo.environment["OSTORE_SERVER_DATA"]
        else {
            Console.error("ostore-server \(command): give the data directory with --data DIR (or OSTORE_SERVER_DATA)")
            return nil
        }
        return path
    }

    static func open(_ arguments: ParsedArguments, command: String) -> SQLiteSyncStorage? {
        guard let path = path(arguments, command: command) else { return nil }
        do {
            return try SQLiteSyncStorage(directory: URL(fileURLWithPath: path))
        } catch {
            Console.error("ostore-server \(command): \(error)")
            return nil
        }
    }
}
