import Foundation
import OfflineStore

// reminders --db PATH [--schema VERSION] COMMAND …: see Usage.swift. Parses the command line
// (usage errors end here, before any file is touched), opens and migrates the database as the
// chosen release, runs the command in one transaction and prints its output after the commit.

func perform(_ command: Command, release: AppRelease, in store: OpenedStore) throws -> String {
    let db = store.db
    switch command {
    case .showLists:
        return try db.transaction { db in try ListCommands.show(release: release, in: db) }
    case .addList(let name, let owner):
        return try db.transaction(.immediate) { db in try ListCommands.add(name: name, owner: owner, in: db) }
    case .shareList(let name, let user, let shares):
        let changed = try db.transaction(.immediate) { db in
            try ListCommands.share(name: name, with: user, shares: shares, in: db)
        }
        switch (shares, changed) {
        case (true, true): return "shared list \(name) with \(user)"
        case (true, false): return "list \(name) was already shared with \(user)"
        case (false, true): return "list \(name) is no longer shared with \(user)"
        case (false, false): return "list \(name) was not shared with \(user)"
        }
    case .removeList(let name):
        let reminders = try db.transaction(.immediate) { db in
            try ListCommands.remove(name: name, release: release, in: db)
        }
        return "removed list \(name) and its \(reminders) reminder(s)"
    case .addReminder(let reminder):
        return try db.transaction(.immediate) { db in
            try ReminderCommands.add(reminder, release: release, in: db)
        }
    case .listReminders(let listing):
        return try db.transaction { db in try listing.output(release: release, in: db) }
    case .editReminder(let edit):
        try db.transaction(.immediate) { db in try ReminderCommands.edit(edit, release: release, in: db) }
        return ""
    case .removeReminder(let id):
        try db.transaction(.immediate) { db in try ReminderCommands.remove(id: id, release: release, in: db) }
        return ""
    case .sync(let target):
        return try SyncCommands.sync(target, release: release, store: store)
    case .daemon(let target, let interval):
        try SyncCommands.daemon(target, interval: interval, release: release, store: store)
        return ""
    case .status(let asJSON):
        return try SyncCommands.status(asJSON: asJSON, release: release, store: store)
    }
}

func run(_ arguments: [String]) -> Int32 {
    if ScannedArguments.asksForHelp(arguments) {
        print(Usage.text)
        return ExitStatus.success
    }
    if ScannedArguments.asksForVersion(arguments) {
        print(
            OfflineStoreRelease.versionLine(tool: "reminders")
                + ", schema releases \(AppRelease.versions.map(AppRelease.shortForm).joined(separator: ", "))")
        return ExitStatus.success
    }
    do {
        let options = try CommandLineOptions(parsing: arguments)
        let store = try ReminderStore.open(path: options.databasePath, release: options.release)
        // Closing checkpoints the WAL into the file and removes the -wal and -shm files.
        defer { try? store.db.close() }
        let output = try perform(options.command, release: options.release, in: store)
        if !output.isEmpty { print(output) }
        return ExitStatus.success
    } catch let failure as CommandFailure {
        StandardError.report(failure.message)
        if failure.kind == .usage { StandardError.write("Try 'reminders --help'.\n") }
        return failure.exitStatus
    } catch {
        StandardError.report("\(error)")
        return ExitStatus.runtimeError
    }
}

exit(run(Array(CommandLine.arguments.dropFirst())))
