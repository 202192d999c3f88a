import CommandLineTool
import Foundation
import SyncProtocol

// ostore-server COMMAND [options]: the reference sync server. Each command is a `Command` in its own file.

let commands: [any Command.Type] = [
    ServeCommand.self, DatasetCommand.self, TokenCommand.self, RulesCommand.self, RestoreCommand.self,
    CursorKeysCommand.self,
]

exit(
    CommandLineTool.run(
        tool: "ostore-server", version: OfflineStoreRelease.versionLine(tool: "ostore-server"), commands: commands,
        arguments: Array(CommandLine.arguments.dropFirst())
    ).rawValue)
