import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server token create --dataset NAME [--read-only]`, `token revoke ID`, `token list`.
enum TokenCommand: Command {
    static let name = "token"
    static let synopsis = "create --dataset NAME [--read-only] | revoke ID | list [--data DIR | --postgres URL]"
    static let summary = "Create a token for a dataset (printed once), revoke one, or list them (without secrets)."
    static let options =
        StorageLocation.options + [
            CommandOption(name: "--dataset", valueName: "NAME", help: "the dataset the token grants"),
            CommandOption(name: "--read-only", valueName: nil, help: "the token may pull but not push"),
        ]
    static let details = """
        create prints the token's id on standard error and the token itself, alone, on standard
        output, so `TOKEN=$(ostore-server token create --dataset NAME)` captures it. The server keeps
        only its SHA-256 digest: a lost token cannot be shown again; create another and revoke the
        old one by its id. Revocation takes effect on the next request.

        exit status: 0 ok, 1 the token is already revoked, 2 usage or storage error
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        switch (arguments.positionals.first, arguments.positionals.count) {
        case ("create", 1):
            guard let dataset = arguments.values["--dataset"] else {
                Console.error("ostore-server token create: name the dataset with --dataset NAME")
                return .failure
            }
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                let token = try storage.createToken(dataset: dataset, readOnly: arguments.flags.contains("--read-only"))
                Console.error(
                    "created \(token.readOnly ? "read-only" : "read-write") token \(token.id) for dataset \(dataset); "
                        + "it is shown once:")
                Console.output(token.secret)
                return .success
            } catch {
                Console.error("ostore-server token create: \(error)")
                return .failure
            }
        case ("revoke", 2):
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                try storage.revokeToken(id: arguments.positionals[1])
                Console.output("revoked token \(arguments.positionals[1])")
                return .success
            } catch {
                Console.error("ostore-server token revoke: \(error)")
                return error.kind == .conflict ? .findings : .failure
            }
        case ("list", 1):
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                for token in try storage.tokens() {
                    Console.output(
                        "\(token.id)\t\(token.dataset)\t\(token.readOnly ? "read-only" : "read-write")"
                            + (token.revoked ? "\trevoked" : ""))
                }
                return .success
            } catch {
                Console.error("ostore-server token list: \(error)")
                return .failure
            }
        default:
            Console.error("usage: ostore-server token \(synopsis)")
            return .failure
        }
    }
}
