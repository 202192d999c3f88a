import CommandLineTool
import Foundation
import OfflineStore

// ostore COMMAND [options]: the OfflineStore command-line tool. Each command is a `Command` in its own file.

let commands: [any Command.Type] = [
    StatusCommand.self, CheckCommand.self, LintCommand.self, LogCommand.self, RescanCommand.self,
]

let arguments = Array(CommandLine.arguments.dropFirst())
exit(
    CommandLineTool.run(
        tool: "ostore", version: OfflineStoreRelease.versionLine(tool: "ostore"), commands: commands,
        arguments: arguments
    ).rawValue)
