import Foundation

/// The whole command line, understood: where the database is, which release to simulate, and
/// the command. Everything a usage error can be found in is checked here, before the database
/// is opened, so a wrong command line never creates or upgrades a file.
struct CommandLineOptions {
    /// The list `add` uses when no `--list` is given.
    static let defaultListName = "Inbox"

    var databasePath: String
    var release: AppRelease
    var command: Command

    init(parsing arguments: [String]) throws(CommandFailure) {
        let scanned = try ScannedArguments(arguments)
        guard let path = scanned.values["--db"] else { throw .usage("missing --db PATH") }
        guard !path.isEmpty else { throw .usage("--db needs a file path") }
        databasePath = path
        if let schema = scanned.values["--schema"] {
            release = try AppRelease(schemaArgument: schema)
        } else {
            release = .latest
        }
        command = try Self.command(from: scanned, release: release)
    }

    private static func command(from scanned: ScannedArguments, release: AppRelease) throws(CommandFailure)
        -> Command
    {
        guard let name = scanned.operands.first else { throw .usage("missing command") }
        let operands = Array(scanned.operands.dropFirst())
        let options = CommandOptions(scanned: scanned, release: release)
        switch name {
        case "lists":
            let subcommand = operands.first
            let listName = { () throws(CommandFailure) -> String in
                try nonEmpty(
                    try single(Array(operands.dropFirst()), "NAME", in: "lists \(subcommand ?? "")"), "NAME")
            }
            switch subcommand {
            case nil:
                try options.allowOnly([], in: "lists")
                return .showLists
            case "add":
                try options.allowOnly(["--owner"], in: "lists add")
                return .addList(name: try listName(), owner: try options.user("--owner"))
            case "rm":
                try options.allowOnly([], in: "lists rm")
                return .removeList(name: try listName())
            case let verb? where verb == "share" || verb == "unshare":
                try options.allowOnly(["--with"], in: "lists \(verb)")
                let name = try listName()
                guard let user = try options.user("--with") else { throw .usage("lists \(verb) needs --with USER") }
                return .shareList(name: name, user: user, shares: verb == "share")
            case let other?:
                throw .usage(
                    "unknown lists command \"\(other)\" (use: lists, lists add NAME, lists rm NAME, "
                        + "lists share NAME --with USER, lists unshare NAME --with USER)")
            }
        case "add":
            try options.allowOnly(["--list", "--priority", "--due", "--notes"], in: "add")
            return .addReminder(
                NewReminder(
                    title: try nonEmpty(try single(operands, "TITLE", in: "add"), "TITLE"),
                    listName: try nonEmpty(scanned.values["--list"] ?? defaultListName, "--list"),
                    priority: try options.priority(), due: try options.dueDate(), notes: try options.notes()))
        case "list":
            try options.allowOnly(["--json", "--search"], in: "list")
            guard operands.isEmpty else { throw .usage("list takes no operands") }
            return .listReminders(
                ReminderListing(asJSON: scanned.flags.contains("--json"), search: try options.search()))
        case "edit":
            try options.allowOnly(["--title", "--priority", "--notes", "--due", "--done"], in: "edit")
            var title: String?
            if let newTitle = scanned.values["--title"] { title = try nonEmpty(newTitle, "--title") }
            let edit = ReminderEdit(
                id: try single(operands, "ID", in: "edit"), title: title,
                priority: try options.priority(), notes: try options.notes(), due: try options.dueDate(),
                marksDone: scanned.flags.contains("--done"))
            guard edit.title != nil || edit.priority != nil || edit.notes != nil || edit.due != nil || edit.marksDone
            else {
                throw .usage("edit needs at least one of --title, --priority, --notes, --due, --done")
            }
            return .editReminder(edit)
        case "rm":
            try options.allowOnly([], in: "rm")
            return .removeReminder(id: try single(operands, "ID", in: "rm"))
        case "sync":
            try options.allowOnly(SyncTarget.options, in: "sync")
            guard operands.isEmpty else { throw .usage("sync takes no operands") }
            return .sync(try SyncTarget(scanned))
        case "daemon":
            try options.allowOnly(SyncTarget.options.union(["--interval"]), in: "daemon")
            guard operands.isEmpty else { throw .usage("daemon takes no operands") }
            let text = scanned.values["--interval"] ?? "30"
            guard let interval = Double(text), interval >= 1, interval <= 86_400 else {
                throw .usage("--interval must be a number of seconds from 1 to 86400, not \"\(text)\"")
            }
            return .daemon(try SyncTarget(scanned), interval: interval)
        case "status":
            try options.allowOnly(["--json"], in: "status")
            guard operands.isEmpty else { throw .usage("status takes no operands") }
            return .status(asJSON: scanned.flags.contains("--json"))
        default:
            throw .usage("unknown command \"\(name)\"")
        }
    }

    private static func single(_ operands: [String], _ name: String, in command: String) throws(CommandFailure)
        -> String
    {
        guard operands.count == 1 else {
            throw .usage(
                operands.isEmpty
                    ? "\(command) needs \(name)"
                    : "\(command) takes one \(name), got \(operands.count) (quote a \(name) that has spaces)")
        }
        return operands[0]
    }

    private static func nonEmpty(_ text: String, _ name: String) throws(CommandFailure) -> String {
        guard !text.isEmpty else { throw .usage("\(name) must not be empty") }
        return text
    }
}

extension SyncTarget {
    static let options: Set<String> = ["--server", "--dataset", "--token", "--token-file", "--ca-file"]

    init(_ scanned: ScannedArguments) throws(CommandFailure) {
        guard let text = scanned.values["--server"] else { throw .usage("missing --server URL") }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil
        else { throw .usage("--server must be an http:// or https:// URL, not \"\(text)\"") }
        server = url
        dataset = scanned.values["--dataset"] ?? "reminders"
        caFile = scanned.values["--ca-file"]
        if let token = scanned.values["--token"] {
            self.token = token
        } else if let token = ProcessInfo.processInfo.environment["OSTORE_TOKEN"], !token.isEmpty {
            self.token = token
        } else if let file = scanned.values["--token-file"] {
            guard let contents = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw .usage("cannot read the token file \(file)")
            }
            token = contents.trimmingCharacters(in: .whitespacesAndNewlines)
        } else {
            throw .usage("give the token with --token, the OSTORE_TOKEN environment variable or --token-file")
        }
        guard !token.isEmpty else { throw .usage("the token is empty") }
    }
}

/// The options of one command, each checked against its format and against the release.
private struct CommandOptions {
    let scanned: ScannedArguments
    let release: AppRelease

    /// Global options are allowed everywhere; anything else must belong to the command.
    func allowOnly(_ allowed: Set<String>, in command: String) throws(CommandFailure) {
        let global: Set<String> = ["--db", "--schema"]
        if let stray = scanned.givenOptions.subtracting(allowed).subtracting(global).sorted().first {
            throw .usage("\(command) does not take \(stray)")
        }
    }

    /// `--priority N`: the 1.1 schema's CHECK allows 0 to 9.
    func priority() throws(CommandFailure) -> Int? {
        guard let text = scanned.values["--priority"] else { return nil }
        try release.require(.priorityAndNotes, for: "--priority")
        guard text.allSatisfy({ $0.isASCII && $0.isNumber }), let priority = Int(text), (0...9).contains(priority)
        else { throw .usage("--priority must be a whole number from 0 to 9, not \"\(text)\"") }
        return priority
    }

    func notes() throws(CommandFailure) -> String? {
        guard let notes = scanned.values["--notes"] else { return nil }
        try release.require(.priorityAndNotes, for: "--notes")
        return notes
    }

    func dueDate() throws(CommandFailure) -> DueDate? {
        guard let text = scanned.values["--due"] else { return nil }
        guard let date = DueDate(text) else {
            throw .usage("--due must be a real date written YYYY-MM-DD, not \"\(text)\"")
        }
        return date
    }

    /// `--owner USER` or `--with USER`: a user id as the server's tokens name it (schema 2.1).
    func user(_ option: String) throws(CommandFailure) -> String? {
        guard let user = scanned.values[option] else { return nil }
        try release.require(.sharedLists, for: option)
        guard !user.isEmpty else { throw .usage("\(option) needs a user id") }
        return user
    }

    func search() throws(CommandFailure) -> String? {
        guard let text = scanned.values["--search"] else { return nil }
        try release.require(.dueAtAndSearch, for: "--search")
        guard text.contains(where: { !$0.isWhitespace }) else { throw .usage("--search needs some text") }
        return text
    }
}
