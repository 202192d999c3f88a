import CommandLineTool
import Foundation
import SyncProtocol
import SyncServer

/// `ostore-server rules check --dataset NAME FILE`, `rules check --schema SCHEMA FILE`,
/// `rules set --dataset NAME FILE` and `rules show --dataset NAME`.
enum RulesCommand: Command {
    static let name = "rules"
    static let synopsis =
        "check (--dataset NAME | --schema SCHEMA) FILE | set --dataset NAME FILE | show --dataset NAME "
        + "[--data DIR | --postgres URL]"
    static let summary =
        "Check, set or show a dataset's scope rules: which rows each user reads and writes."
    static let options =
        StorageLocation.options + [
            CommandOption(
                name: "--dataset", valueName: "NAME",
                help: "check against the newest schema the dataset's devices announced with their definition"),
            CommandOption(
                name: "--schema", valueName: "SCHEMA",
                help: "check against this file instead: a schema definition as a hello carries it ({\"tables\": […]})"),
        ]
    static let details = """
        FILE is a rules file, JSON of the form Protocol/schemas/scope-rules.json describes; the guide
        is docs/scoped-sync.md. The check reads the file by the protocol's strict JSON rules and then
        lists every rule that does not fit the schema, naming the rule and the table or column:
        names the schema lacks, synced tables without rules, a subject or claim compared with a
        column that does not keep text, memberships of another affinity than the column they
        select, parent filters without a foreign key to the parent's primary key, and parent
        filters in a circle.

        set checks the file the same way against the newest schema the dataset's devices announced,
        then makes it the dataset's rules: every device's next pull and push are served under them
        (a running server reads them at its next request; its request log says so with a
        scopeRules line). show prints the rules in force (their version and when they were set on
        standard error). Rules need the
        embedded SQLite storage (--data DIR) in this release.

        exit status: 0 the rules fit (check, set) or were shown, 1 they do not fit (each problem on
        its own line), 2 usage, storage or file error
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        switch (arguments.positionals.first, arguments.positionals.count) {
        case ("check", 2): return check(arguments, command: "check", reportsFit: true)
        case ("set", 2): return set(arguments)
        case ("show", 1): return show(arguments)
        default:
            Console.error("usage: ostore-server rules \(synopsis)")
            return .failure
        }
    }

    private static func set(_ arguments: ParsedArguments) -> ExitStatus {
        guard let dataset = arguments.values["--dataset"], arguments.values["--schema"] == nil else {
            Console.error("ostore-server rules set: name the dataset with --dataset NAME (and no --schema)")
            return .failure
        }
        // The same check as `rules check`, with its answers, before anything is set.
        let checked = check(arguments, command: "set", reportsFit: false)
        guard checked == .success else { return checked }
        let path = arguments.positionals[1]
        guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
        do {
            try storage.setScopeRules(try String(contentsOfFile: path, encoding: .utf8), dataset: dataset)
            let version = try storage.scopeRules(of: dataset)?.version ?? 0
            Console.output("dataset \(dataset) is served under the rules of \(path) (version \(version))")
            return .success
        } catch {
            Console.error("ostore-server rules set: \(error)")
            return .failure
        }
    }

    private static func show(_ arguments: ParsedArguments) -> ExitStatus {
        guard let dataset = arguments.values["--dataset"] else {
            Console.error("ostore-server rules show: name the dataset with --dataset NAME")
            return .failure
        }
        guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
        do {
            guard let rules = try storage.scopeRules(of: dataset) else {
                Console.output("dataset \(dataset) has no scope rules: every token reads and writes all of it")
                return .success
            }
            // The file alone on standard output, so that it can be saved and set again.
            Console.error("version \(rules.version), set \(ISO8601DateFormatter().string(from: rules.setAt))")
            Console.output(rules.text)
            return .success
        } catch {
            Console.error("ostore-server rules show: \(error)")
            return .failure
        }
    }

    /// Checks the rules file named on the command line against the schema the options name,
    /// printing what does not fit, and that it fits when `reportsFit`.
    private static func check(_ arguments: ParsedArguments, command: String, reportsFit: Bool) -> ExitStatus {
        let path = arguments.positionals[1]
        let rules: ScopeRules
        do {
            rules = try ScopeRules.read(from: try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch let problem as ScopeRuleProblem {
            Console.error("ostore-server rules \(command): \(path): \(problem)")
            return .findings
        } catch {
            Console.error("ostore-server rules \(command): \(path) cannot be read: \(error.localizedDescription)")
            return .failure
        }
        guard let (definition, against) = schema(arguments, command: command) else { return .failure }
        let problems = rules.problems(against: definition)
        guard problems.isEmpty else {
            Console.error("ostore-server rules \(command): \(path) does not fit \(against):")
            for problem in problems { Console.error("  \(problem)") }
            return .findings
        }
        if reportsFit {
            let filters = rules.tables.values.reduce(0) { $0 + $1.read.count + $1.write.count }
            Console.output("\(path) fits \(against): \(rules.tables.count) tables, \(filters) filters")
        }
        return .success
    }

    /// The definition to check against and how to name it; nil after printing why when there is
    /// none.
    private static func schema(_ arguments: ParsedArguments, command: String) -> (SchemaDefinition, String)? {
        switch (arguments.values["--dataset"], arguments.values["--schema"]) {
        case (let dataset?, nil):
            guard let storage = StorageLocation.open(arguments, command: name) else { return nil }
            do {
                guard
                    let (version, definition) = try storage.schemaDefinitions(of: dataset).max(by: { $0.key < $1.key })
                else {
                    Console.error(
                        "ostore-server rules \(command): no device of dataset \(dataset) has announced its schema's "
                            + "definition yet; sync one, or check against a definition with --schema SCHEMA")
                    return nil
                }
                return (definition, "dataset \(dataset)'s schema \(version)")
            } catch {
                Console.error("ostore-server rules \(command): \(error)")
                return nil
            }
        case (nil, let path?):
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                return (try JSONDecoder().decode(SchemaDefinition.self, from: data), "the schema in \(path)")
            } catch {
                Console.error("ostore-server rules \(command): \(path) is not a schema definition: \(error)")
                return nil
            }
        default:
            Console.error("ostore-server rules \(command): give --dataset NAME or --schema SCHEMA, one of them")
            return nil
        }
    }
}
