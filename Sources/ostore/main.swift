import Foundation

// ostore COMMAND [options]: the OfflineStore command-line tool. Each command is a `Command` in its own file.

let commands: [any Command.Type] = [
    StatusCommand.self, CheckCommand.self, LintCommand.self, LogCommand.self, RescanCommand.self,
]

let generalHelp = """
    usage: ostore COMMAND [options]

    commands:
    \(commands.map { "  \($0.name)  \($0.summary)" }.joined(separator: "\n"))

    Run ostore COMMAND --help for a command's options.
    """

@MainActor
func runOstore(_ arguments: [String]) -> ExitStatus {
    guard let name = arguments.first else {
        Console.error(generalHelp)
        return .failure
    }
    if ["--help", "-h", "help"].contains(name) {
        Console.output(generalHelp)
        return .success
    }
    guard let command = commands.first(where: { $0.name == name }) else {
        Console.error("ostore: unknown command \(name)\n\n\(generalHelp)")
        return .failure
    }
    let rest = Array(arguments.dropFirst())
    // --help anywhere before `--` asks for help rather than running.
    if rest.prefix(while: { $0 != "--" }).contains(where: { $0 == "--help" || $0 == "-h" }) {
        Console.output(command.help)
        return .success
    }
    do {
        return command.run(try ParsedArguments(rest, options: command.options))
    } catch {
        Console.error("ostore \(command.name): \(error)\nusage: ostore \(command.name) \(command.synopsis)")
        return .failure
    }
}

exit(runOstore(Array(CommandLine.arguments.dropFirst())).rawValue)
