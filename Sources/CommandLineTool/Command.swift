/// One subcommand of a command-line tool (`ostore status`, `ostore-server serve`).
///
/// To add one: write a type conforming to `Command` in its own file and list it in the tool's
/// `commands` in its main.swift; ``CommandLineTool/run(tool:version:commands:arguments:)`` handles
/// `--help`, `--version`, option parsing and usage errors for every command.
package protocol Command {
    /// The subcommand as typed: `lint`.
    static var name: String { get }
    /// What follows `TOOL NAME` in the usage line: `[--db PATH] FILE.sql...`.
    static var synopsis: String { get }
    /// One line for `TOOL --help`.
    static var summary: String { get }
    /// More text for `TOOL NAME --help`, after the usage and options.
    static var details: String { get }
    /// The options the command accepts; anything else starting with `-` is a usage error.
    static var options: [CommandOption] { get }
    /// Runs the command and says how the process should exit.
    static func run(_ arguments: ParsedArguments) -> ExitStatus
}

/// An option of a command: a flag (`--json`) or an option with a value (`--db PATH`).
package struct CommandOption {
    /// With its dashes: `--db`.
    package let name: String
    /// For options that take a value, what to call it in help: `PATH`; nil for flags.
    package let valueName: String?
    package let help: String

    package init(name: String, valueName: String?, help: String) {
        self.name = name
        self.valueName = valueName
        self.help = help
    }
}

/// The process exit status of every command.
package enum ExitStatus: Int32 {
    case success = 0
    /// The command worked and found problems (lint findings, failed checks).
    case findings = 1
    /// A usage error (unknown option, missing argument) or an I/O error (unreadable file or database).
    case failure = 2
}

extension Command {
    /// The whole `TOOL NAME --help` text.
    package static func help(tool: String) -> String {
        var lines = ["usage: \(tool) \(name) \(synopsis)", "", summary]
        if !options.isEmpty {
            lines += ["", "options:"]
            let labels = options.map { option in option.valueName.map { "\(option.name) \($0)" } ?? option.name }
            let width = labels.map(\.count).max() ?? 0
            for (label, option) in zip(labels, options) {
                lines.append("  " + label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + option.help)
            }
            lines.append("  " + "--help".padding(toLength: width, withPad: " ", startingAt: 0) + "  show this help")
        }
        if !details.isEmpty { lines += ["", details] }
        return lines.joined(separator: "\n")
    }
}
