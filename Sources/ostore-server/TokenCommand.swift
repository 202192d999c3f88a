import CommandLineTool
import Foundation
import SyncServer

/// `ostore-server token create --dataset NAME [--read-only] [--subject ID] [--claim NAME=VALUE]...
/// [--expires WHEN]`, `token revoke ID`, `token list`.
enum TokenCommand: Command {
    static let name = "token"
    static let synopsis =
        "create --dataset NAME [--read-only] [--subject ID] [--claim NAME=VALUE]... [--expires WHEN] | revoke ID | "
        + "list [--data DIR | --postgres URL]"
    static let summary = "Create a token for a dataset (printed once), revoke one, or list them (without secrets)."
    static let options =
        StorageLocation.options + [
            CommandOption(name: "--dataset", valueName: "NAME", help: "the dataset the token grants"),
            CommandOption(name: "--read-only", valueName: nil, help: "the token may pull but not push"),
            CommandOption(name: "--subject", valueName: "ID", help: "the user the token stands for"),
            CommandOption(
                name: "--claim", valueName: "NAME=VALUE", help: "a claim of the token (repeat for several)"),
            CommandOption(
                name: "--expires", valueName: "WHEN",
                help: "when the token stops being accepted: a span (90d, 12h, 30m) or a time (2027-01-31T00:00:00Z)"),
        ]
    static let details = """
        create prints the token's id on standard error and the token itself, alone, on standard
        output, so `TOKEN=$(ostore-server token create --dataset NAME)` captures it. The server keeps
        only its SHA-256 digest: a lost token cannot be shown again; create another and revoke the
        old one by its id. Revocation takes effect on the next request.

        --subject names the user the token stands for, and --claim NAME=VALUE gives it claims (as a
        JSON Web Token's), for the dataset's rules; without them the token stands for whoever holds
        it. After --expires it is refused (401, saying it expired); without it, it never expires.
        list prints each token's id, dataset, kind, subject and expiry.

        exit status: 0 ok, 1 the token is already revoked, 2 usage or storage error
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        switch (arguments.positionals.first, arguments.positionals.count) {
        case ("create", 1):
            guard let dataset = arguments.values["--dataset"] else {
                Console.error("ostore-server token create: name the dataset with --dataset NAME")
                return .failure
            }
            guard let identity = identity(arguments) else { return .failure }
            guard let storage = StorageLocation.open(arguments, command: name) else { return .failure }
            do {
                let token = try storage.createToken(
                    dataset: dataset, readOnly: arguments.flags.contains("--read-only"), identity: identity)
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
                let now = Date()
                for token in try storage.tokens() {
                    let expiry = token.expiresAt.map {
                        ($0 <= now ? "expired " : "expires ") + $0.formatted(.iso8601)
                    }
                    Console.output(
                        ([token.id, token.dataset, token.readOnly ? "read-only" : "read-write"]
                            + [token.subject.map { "subject \($0)" }, expiry, token.revoked ? "revoked" : nil]
                            .compactMap { $0 }).joined(separator: "\t"))
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

    /// Whom `create`'s token stands for, from --subject, --claim and --expires; nil (after saying
    /// why) for a value that does not read.
    private static func identity(_ arguments: ParsedArguments, now: Date = Date()) -> TokenIdentity? {
        var identity = TokenIdentity(subject: arguments.values["--subject"])
        for claim in arguments.allValues["--claim"] ?? [] {
            let parts = claim.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else {
                Console.error("ostore-server token create: --claim takes NAME=VALUE, not \(claim)")
                return nil
            }
            guard identity.claims.updateValue(String(parts[1]), forKey: String(parts[0])) == nil else {
                Console.error("ostore-server token create: claim \(parts[0]) is given twice")
                return nil
            }
        }
        if let expires = arguments.values["--expires"] {
            if let seconds = DurationText.seconds(in: expires) {
                identity.expiresAt = now.addingTimeInterval(TimeInterval(seconds))
            } else if let date = try? Date(expires, strategy: .iso8601) {
                identity.expiresAt = date
            } else if let day = try? Date(expires, strategy: .iso8601.year().month().day()) {
                identity.expiresAt = day
            } else {
                Console.error(
                    "ostore-server token create: --expires takes a span such as 90d, 12h or 30m, or a time such as "
                        + "2027-01-31T00:00:00Z, not \(expires)")
                return nil
            }
        }
        do {
            try identity.check(now: now)
        } catch {
            Console.error("ostore-server token create: \(error)")
            return nil
        }
        return identity
    }
}
