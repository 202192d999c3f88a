import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server dataset create NAME [--allow-major N]`, `dataset allow-major --dataset NAME N`,
/// `dataset list` and `dataset stats --dataset NAME [--json]`.
enum DatasetCommand: Command {
    static let name = "dataset"
    static let synopsis =
        "create NAME [--allow-major N] | allow-major --dataset NAME N | list | stats --dataset NAME [--json] "
        + "[--data DIR | --postgres URL]"
    static let summary =
        "Create a dataset (the unit clients sync and tokens grant), let its schema move to a new major, list them, "
        + "or show what one's log and state hold."
    static let options =
        StorageLocation.options + [
            CommandOption(
                name: "--dataset", valueName: "NAME", help: "the dataset allow-major lets move, or stats shows"),
            CommandOption(name: "--json", valueName: nil, help: "with stats: print the figures as a JSON object"),
            CommandOption(
                name: "--allow-major", valueName: "N",
                help: "with create: the highest major schema version its first and later hellos may move it to"),
        ]
    static let details = """
        A dataset name is 1 to 63 characters: lowercase letters, digits, '-' and '_', starting with a
        letter or digit. The server may be running meanwhile.

        A new dataset takes the schema version of the first device that says hello (any major, unless
        --allow-major bounds it) and then stays at that major: a hello of an app with a higher major is
        refused (409 major_not_allowed) and moves nothing, until allow-major N lets the dataset move up
        to major N. Allow a new major once its app release is out; devices still on the older major
        are then told to upgrade.

        stats reads the dataset's log (its changes and the bytes of their bodies, the newest serial)
        and counts its state's rows, live and deleted (tombstones), and the serial the state holds the
        log up to; the log keeps every change since the dataset was made. It scans the dataset's
        rows: a look for an operator, safe while the server runs.

        exit status: 0 ok, 1 the dataset exists already (create) or is at a higher major than N
        (allow-major), 2 usage or storage error
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        switch (arguments.positionals.first, arguments.positionals.count) {
        case ("create", 2):
            let dataset = arguments.positionals[1]
            var major: Int?
            if let text = arguments.values["--allow-major"] {
                guard let parsed = Self.major(text, command: "create") else { return .failure }
                major = parsed
            }
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                try storage.createDataset(named: dataset)
                if let major { try storage.allowMajor(major, dataset: dataset) }
                Console.output("created dataset \(dataset)" + (major.map { " (may move up to major \($0))" } ?? ""))
                return .success
            } catch {
                Console.error("ostore-server dataset create: \(error)")
                return error.kind == .conflict ? .findings : .failure
            }
        case ("allow-major", 2):
            guard let dataset = arguments.values["--dataset"] else {
                Console.error("ostore-server dataset allow-major: name the dataset with --dataset NAME")
                return .failure
            }
            guard let major = Self.major(arguments.positionals[1], command: "allow-major"),
                let storage = StorageLocation.open(arguments, command: name)
            else { return .failure }
            do {
                try storage.allowMajor(major, dataset: dataset)
                Console.output("dataset \(dataset) may move up to major \(major)")
                return .success
            } catch {
                Console.error("ostore-server dataset allow-major: \(error)")
                return error.kind == .conflict ? .findings : .failure
            }
        case ("list", 1):
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                for dataset in try storage.datasets() {
                    Console.output(
                        "\(dataset.name)\tschema \(dataset.schemaVersion?.description ?? "-")\t\(dataset.changes) changes"
                            + (dataset.allowedMajorVersion.map { "\tmay move up to major \($0)" } ?? ""))
                }
                return .success
            } catch {
                Console.error("ostore-server dataset list: \(error)")
                return .failure
            }
        case ("stats", 1):
            guard let dataset = arguments.values["--dataset"] else {
                Console.error("ostore-server dataset stats: name the dataset with --dataset NAME")
                return .failure
            }
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                let stats = try storage.datasetStats(dataset)
                if arguments.flags.contains("--json") {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    Console.output(String(decoding: try encoder.encode(stats), as: UTF8.self))
                } else {
                    Console.output(Self.describe(stats))
                }
                return .success
            } catch {
                Console.error("ostore-server dataset stats: \(error)")
                return .failure
            }
        default:
            Console.error("usage: ostore-server dataset \(synopsis)")
            return .failure
        }
    }

    /// The figures as lines for a person.
    static func describe(_ stats: DatasetStats) -> String {
        let horizon =
            stats.horizonSerial.map { "changes from serial \($0) on are kept" }
            ?? "every change since the dataset was made is kept"
        return """
            dataset:  \(stats.dataset)
            log:      \(stats.logEntries) changes, \(stats.logBytes) bytes, newest serial \(stats.lastSerial)
            horizon:  \(horizon)
            state:    \(stats.liveRows + stats.tombstones) rows: \(stats.liveRows) live, \(stats.tombstones) tombstones; \
            holds the log up to serial \(stats.foldedSerial)
            """
    }

    /// A major version given on the command line; nil after printing why when it is not a number.
    private static func major(_ text: String, command: String) -> Int? {
        guard let major = Int(text), major >= 0 else {
            Console.error(
                "ostore-server dataset \(command): \(text) is not a major schema version; give a number such as 2")
            return nil
        }
        return major
    }
}
