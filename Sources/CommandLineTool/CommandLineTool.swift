import Foundation

/// Runs a tool's subcommand: `TOOL COMMAND [options]`, with `--help` and `--version` for the tool
/// and for each command, and usage errors answered with the command's synopsis and exit status 2.
///
/// ```swift
/// exit(CommandLineTool.run(tool: "ostore", version: line, commands: [StatusCommand.self], arguments: arguments).rawValue)
/// ```
package enum CommandLineTool {
    /// `version`: the line `--version` prints (the release and the protocol versions it speaks).
    package static func run(tool: String, version: String, commands: [any Command.Type], arguments: [String])
        -> ExitStatus
    {
        let generalHelp = """
            usage: \(tool) COMMAND [options]

            commands:
            \(commands.map { "  \($0.name)  \($0.summary)" }.joined(separator: "\n"))

            Run \(tool) COMMAND --help for a command's options, \(tool) --version for the release.
            """
        guard let name = arguments.first else {
            Console.error(generalHelp)
            return .failure
        }
        if ["--help", "-h", "help"].contains(name) {
            Console.output(generalHelp)
            return .success
        }
        if name == "--version" {
            Console.output(version)
            return .success
        }
        guard let command = commands.first(where: { $0.name == name }) else {
            Console.error("\(tool): unknown command \(name)\n\n\(generalHelp)")
            return .failure
        }
        let rest = Array(arguments.dropFirst())
        // --help anywhere before `--` asks for help rather than running.
        let beforeEnd = rest.prefix(while: { $0 != "--" })
        if beforeEnd.contains(where: { $0 == "--help" || $0 == "-h" }) {
            Console.output(command.help(tool: tool))
            return .success
        }
        if beforeEnd.contains("--version") {
            Console.output(version)
            return .success
        }
        do {
            return command.run(try ParsedArguments(rest, options: command.options))
        } catch {
            Console.error("\(tool) \(command.name): \(error)\nusage: \(tool) \(command.name) \(command.synopsis)")
            return .failure
        }
    }
}
