/// A command's arguments, split into flags, options with values and positional arguments.
///
/// Accepts `--name value`, `--name=value`, and `--` to end options (everything after it is positional).
package struct ParsedArguments {
    /// Flags given, with their dashes: `--json`.
    package private(set) var flags: Set<String> = []
    /// Options given with a value, by name with dashes; the last one wins when repeated.
    package private(set) var values: [String: String] = [:]
    /// Every value of each option given with one, in order: for options that may be repeated.
    package private(set) var allValues: [String: [String]] = [:]
    package private(set) var positionals: [String] = []

    package init(_ arguments: [String], options: [CommandOption]) throws(UsageError) {
        let byName = Dictionary(options.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "--" {
                positionals += remaining
                return
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positionals.append(argument)
                continue
            }
            let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
            guard let option = byName[parts[0]] else { throw UsageError("unknown option \(parts[0])") }
            if option.valueName == nil {
                guard parts.count == 1 else { throw UsageError("\(option.name) takes no value") }
                flags.insert(option.name)
            } else if parts.count == 2 {
                values[option.name] = parts[1]
                allValues[option.name, default: []].append(parts[1])
            } else if let value = remaining.popFirst() {
                values[option.name] = value
                allValues[option.name, default: []].append(value)
            } else {
                throw UsageError("\(option.name) needs a \(option.valueName ?? "value")")
            }
        }
    }
}

/// Arguments a command cannot run with; main.swift prints it with a pointer to `--help` and exits with 2.
package struct UsageError: Error, CustomStringConvertible {
    package let description: String

    package init(_ description: String) {
        self.description = description
    }
}
