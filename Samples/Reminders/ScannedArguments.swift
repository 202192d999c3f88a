/// The command line split into options and operands, before any meaning is given to them.
///
/// Options may come anywhere (`--db PATH` before or after the command), as `--name value` or
/// `--name=value`; `--` ends the options, so a title that starts with `-` can still be given.
/// An option value is taken as is, even when it starts with `-`.
struct ScannedArguments {
    /// Options that take a value, and flags; anything else that starts with `-` is a usage error.
    static let valueOptions: Set<String> = [
        "--db", "--schema", "--list", "--priority", "--due", "--notes", "--search", "--title", "--server",
        "--dataset", "--token", "--token-file", "--interval", "--ca-file", "--owner", "--with",
    ]
    static let flagOptions: Set<String> = ["--json", "--done"]

    private(set) var values: [String: String] = [:]
    private(set) var flags: Set<String> = []
    private(set) var operands: [String] = []

    /// Whether the user asked for help: `-h` or `--help` before any `--`, wherever it is, so
    /// help works even on an otherwise broken command line.
    /// `--version` anywhere before `--`.
    static func asksForVersion(_ arguments: [String]) -> Bool {
        arguments.prefix(while: { $0 != "--" }).contains("--version")
    }

    static func asksForHelp(_ arguments: [String]) -> Bool {
        for argument in arguments {
            if argument == "--" { return false }
            if argument == "--help" || argument == "-h" { return true }
        }
        return false
    }

    init(_ arguments: [String]) throws(CommandFailure) {
        var remaining = arguments[...]
        var optionsEnded = false
        while let argument = remaining.popFirst() {
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                operands.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let name = String(argument.prefix { $0 != "=" })
            let inlineValue = argument.firstIndex(of: "=").map { String(argument[argument.index(after: $0)...]) }
            if Self.flagOptions.contains(name) {
                guard inlineValue == nil else { throw .usage("\(name) takes no value") }
                flags.insert(name)
            } else if Self.valueOptions.contains(name) {
                guard let value = inlineValue ?? remaining.popFirst() else { throw .usage("\(name) needs a value") }
                guard values[name] == nil else { throw .usage("\(name) is given twice") }
                values[name] = value
            } else {
                throw .usage("unknown option \(name)")
            }
        }
    }

    /// Every option and flag given, for checking them against what a command accepts.
    var givenOptions: Set<String> { flags.union(values.keys) }
}
