import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server dataset create NAME` and `ostore-server dataset list`.
enum DatasetCommand: Command {
    static let name = "dataset"
    static let synopsis = "create NAME | list [--data DIR | --postgres URL]"
    static let summary = "Create a dataset (the unit clients sync and tokens grant), or list them."
    static let options = StorageLocation.options
    static let details = """
        A dataset name is 1 to 63 characters: lowercase letters, digits, '-' and '_', starting with a
        letter or digit. The server may be running meanwhile.

        exit status: 0 ok, 1 the dataset exists already, 2 usage or storage error
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        switch (arguments.positionals.first, arguments.positionals.count) {
        case ("create", 2):
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                try storage.createDataset(named: arguments.positionals[1])
                Console.output("created dataset \(arguments.positionals[1])")
                return .success
            } catch {
                Console.error("ostore-server dataset create: \(error)")
                return error.kind == .conflict ? .findings : .failure
            }
        case ("list", 1):
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                for dataset in try storage.datasets() {
                    Console.output(
                        "\(dataset.name)\tschema \(dataset.schemaVersion?.description ?? "-")\t\(dataset.changes) changes"
                    )
                }
                return .success
            } catch {
                Console.error("ostore-server dataset list: \(error)")
                return .failure
            }
        default:
            Console.error("usage: ostore-server dataset \(synopsis)")
            return .failure
        }
    }
}
