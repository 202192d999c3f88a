import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

/// The `reminders` sample run as a user runs it: the built executable in a subprocess, on a
/// database in the test's own temporary directory, through the app releases 1.0, 1.1 and 2.0.
@Suite("The reminders command-line sample")
struct RemindersCLITests {
    @Test("1.0: add and list --json print every 1.0 column, values bound and typed")
    func addAndListJSONAtRelease1_0() throws {
        let cli = try RemindersCLI()
        let home = try cli.succeed("--schema", "1.0", "lists", "add", "Home")
        #expect(UUID(uuidString: home) != nil)
        let milk = try cli.succeed("--schema", "1.0", "add", "Buy milk", "--list", "Home", "--due", "2024-05-01")
        let hostileTitle = "Robert'); DROP TABLE reminders; -- \"quoted\" \\ tab\t"
        let hostile = try cli.succeed("--schema", "1.0", "add", hostileTitle)

        let reminders = try cli.json("--schema", "1.0", "list", "--json")
        #expect(reminders.count == 2)
        for reminder in reminders {
            #expect(reminder.keys.sorted() == ["dueDate", "id", "isDone", "listID", "title"])
        }
        #expect(reminders[0]["id"] as? String == milk)
        #expect(reminders[0]["title"] as? String == "Buy milk")
        #expect(reminders[0]["listID"] as? String == home)
        #expect(reminders[0]["dueDate"] as? String == "2024-05-01")
        #expect(reminders[0]["isDone"] as? Int == 0)
        #expect(reminders[1]["id"] as? String == hostile)
        #expect(reminders[1]["title"] as? String == hostileTitle)
        #expect(reminders[1]["dueDate"] is NSNull)

        // Without --list the reminder went to "Inbox", created on demand.
        let lists = try cli.succeed("--schema", "1.0", "lists")
        #expect(lists.contains("Home") && lists.contains("Inbox"))
        let db = try Database(path: cli.databasePath)
        #expect(
            try db.scalar(
                String.self, "SELECT name FROM remindersLists WHERE id = \(reminders[1]["listID"] as? String)")
                == "Inbox")
        #expect(try db.count("reminders") == 2)
        #expect(try db.scalar(String.self, "SELECT max(toVersion) FROM ostore_migrations") == "1.0.0")
    }

    @Test("1.0 → 1.1 → 2.0 → 2.1 keeps every row and backfills dueAt from dueDate")
    func upgradePathKeepsRowsAndBackfillsDueAt() throws {
        let cli = try RemindersCLI()
        let milk = try cli.succeed("--schema", "1.0", "add", "Buy milk", "--due", "2024-05-01")
        let leap = try cli.succeed("--schema", "1.0", "add", "Leap day", "--due", "2024-02-29", "--list", "Dates")
        let plumber = try cli.succeed(
            "--schema", "1.1", "add", "Call the plumber", "--priority", "7", "--notes", "the kitchen leak")

        let afterMinorUpgrade = try cli.json("--schema", "1.1", "list", "--json")
        #expect(afterMinorUpgrade.map { $0["id"] as? String } == [milk, leap, plumber])
        #expect(
            afterMinorUpgrade[0].keys.sorted() == ["dueDate", "id", "isDone", "listID", "notes", "priority", "title"])
        #expect(afterMinorUpgrade[0]["notes"] as? String == "")
        #expect(afterMinorUpgrade[0]["priority"] is NSNull)

        let later = try cli.succeed("add", "Renew passport", "--due", "2031-12-31")
        let afterMajorUpgrade = try cli.json("list", "--json")
        #expect(afterMajorUpgrade.map { $0["id"] as? String } == [milk, leap, plumber, later])
        #expect(
            afterMajorUpgrade[0].keys.sorted() == [
                "dueAt", "dueDate", "id", "isDone", "listID", "notes", "priority", "title",
            ])
        // Midnight UTC of the day: backfilled by the 2.0 stage for the old rows, written by `add` for the new one.
        #expect(afterMajorUpgrade[0]["dueAt"] as? Double == 1_714_521_600)
        #expect(afterMajorUpgrade[1]["dueAt"] as? Double == 1_709_164_800)
        #expect(afterMajorUpgrade[2]["dueAt"] is NSNull)
        #expect(afterMajorUpgrade[3]["dueAt"] as? Double == 1_956_441_600)
        #expect(afterMajorUpgrade[2]["priority"] as? Int == 7)
        #expect(afterMajorUpgrade[2]["notes"] as? String == "the kitchen leak")
        #expect(afterMajorUpgrade[1]["dueDate"] as? String == "2024-02-29")

        let db = try Database(path: cli.databasePath)
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM reminders WHERE dueAt IS NOT unixepoch(dueDate)") == 0)
        #expect(
            try db.scalar(Int.self, "SELECT count(*) FROM reminders WHERE typeof(dueAt) NOT IN ('real', 'null')") == 0)
        #expect(try db.count("reminderSearch") == 4)
        #expect(
            try db.fetchAll(String.self, "SELECT toVersion FROM ostore_migrations ORDER BY position") == [
                "1.0.0", "1.1.0", "2.0.0", "2.1.0",
            ])
    }

    @Test("2.0: --search treats hostile text as words, and the index follows add, edit and rm")
    func searchAtRelease2_0() throws {
        let cli = try RemindersCLI()
        let plumber = try cli.succeed("add", "Call the plumber", "--notes", "the \"kitchen\" leak")
        let milk = try cli.succeed("add", "Buy milk OR cream")

        #expect(try cli.json("list", "--json", "--search", "kitchen").map { $0["id"] as? String } == [plumber])
        #expect(try cli.json("list", "--json", "--search", "\"kitchen\"").map { $0["id"] as? String } == [plumber])
        // FTS5 operators are searched for as a phrase, not obeyed: "milk OR cream" is in one title.
        #expect(try cli.json("list", "--json", "--search", "milk OR cream").map { $0["id"] as? String } == [milk])
        for hostile in [
            "milk\" OR title:*", "\"", "NEAR(milk plumber)", "kitchen*) OR (", "'; DROP TABLE reminders; --", "^milk",
            "title:plumber", "-milk", "\"\"\"",
        ] {
            let outcome = try cli.run("list", "--json", "--search", hostile)
            #expect(outcome.status == 0, "search for \(hostile): \(outcome.standardError)")
            #expect(outcome.standardError.isEmpty)
        }

        try cli.succeed("edit", plumber, "--title", "Call the electrician", "--notes", "fuse box")
        #expect(try cli.json("list", "--json", "--search", "kitchen").isEmpty)
        #expect(try cli.json("list", "--json", "--search", "fuse box").map { $0["id"] as? String } == [plumber])
        try cli.succeed("rm", plumber)
        #expect(try cli.json("list", "--json", "--search", "electrician").isEmpty)

        let db = try Database(path: cli.databasePath)
        #expect(try db.count("reminders") == 1)
        #expect(try db.fetchAll(String.self, "SELECT reminderID FROM reminderSearch") == [milk])
    }

    @Test("1.0 on a 2.1 file is refused with exit 1 and leaves the file byte for byte as it was")
    func olderReleaseRefusesNewerFile() throws {
        let cli = try RemindersCLI()
        try cli.succeed("add", "Buy milk", "--due", "2024-05-01")
        let before = try Data(contentsOf: URL(fileURLWithPath: cli.databasePath))

        for release in ["1.0", "1.1"] {
            let outcome = try cli.run("--schema", release, "add", "Written by an old release")
            #expect(outcome.status == 1)
            #expect(outcome.standardOutput.isEmpty)
            #expect(outcome.standardError.hasPrefix("reminders: "))
            #expect(outcome.standardError.contains("newer release"))
            #expect(outcome.standardError.contains("2.1.0"))
        }

        #expect(try Data(contentsOf: URL(fileURLWithPath: cli.databasePath)) == before)
        let db = try Database(path: cli.databasePath)
        #expect(try db.count("ostore_migrations") == 4)
        #expect(try db.count("reminders") == 1)
    }

    @Test(
        "Usage errors exit 2 and touch no file",
        arguments: [
            ["list"], ["--db"], ["--db", "", "list"], ["--db", "DB"], ["--db", "DB", "frobnicate"],
            ["--db", "DB", "list", "--frobnicate"], ["--db", "DB", "--schema", "3.0", "list"],
            ["--db", "DB", "--schema", "1", "list", "--schema", "2.0"], ["--db", "DB", "add"],
            ["--db", "DB", "add", "one", "two"], ["--db", "DB", "add", ""],
            ["--db", "DB", "add", "x", "--due", "2023-02-29"], ["--db", "DB", "add", "x", "--due", "2024-5-01"],
            ["--db", "DB", "add", "x", "--due", "01-05-2024"], ["--db", "DB", "add", "x", "--priority", "10"],
            ["--db", "DB", "add", "x", "--priority", "-1"], ["--db", "DB", "add", "x", "--priority", "high"],
            ["--db", "DB", "edit", "some-id"], ["--db", "DB", "edit"], ["--db", "DB", "rm"],
            ["--db", "DB", "lists", "--json"], ["--db", "DB", "lists", "remove", "Home"],
            ["--db", "DB", "--schema", "1.1", "list", "--search", "milk"], ["--db", "DB", "list", "--json=yes"],
            ["--db", "DB", "--schema", "1.0", "add", "x", "--notes", "n"],
            ["--db", "DB", "--schema", "1.0", "edit", "some-id", "--priority", "1"],
        ])
    func usageErrorsExitTwo(commandLine: [String]) throws {
        let cli = try RemindersCLI()
        // "DB" stands for the test's database path, which must still not exist afterwards.
        let outcome = try cli.run(databaseArguments: commandLine.map { $0 == "DB" ? cli.databasePath : $0 })
        #expect(outcome.status == 2)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("reminders: "))
        #expect(!FileManager.default.fileExists(atPath: cli.databasePath))
    }

    @Test("--priority at 1.0 is refused before the file is opened")
    func priorityAtRelease1_0Refused() throws {
        let cli = try RemindersCLI()
        try cli.succeed("--schema", "1.0", "add", "Buy milk")
        let outcome = try cli.run("--schema", "1.0", "add", "Call the plumber", "--priority", "3")
        #expect(outcome.status == 2)
        #expect(outcome.standardError.hasPrefix("reminders: --priority needs schema 1.1 or later\n"))
        let db = try Database(path: cli.databasePath)
        #expect(try db.count("reminders") == 1)
        #expect(try db.count("ostore_migrations") == 1)
    }

    @Test("edit and rm of an unknown id fail with exit 1")
    func unknownIDFails() throws {
        let cli = try RemindersCLI()
        let milk = try cli.succeed("add", "Buy milk")
        for arguments in [["edit", "no-such-id", "--done"], ["rm", "no-such-id"]] {
            let outcome = try cli.run(arguments)
            #expect(outcome.status == 1)
            #expect(outcome.standardError.contains("no-such-id"))
        }
        try cli.succeed("edit", milk, "--done")
        #expect(try cli.json("list", "--json").first?["isDone"] as? Int == 1)
    }

    @Test("rm at 1.1 removes the reminder's tags by cascade")
    func removeCascadesToTags() throws {
        let cli = try RemindersCLI()
        let milk = try cli.succeed("--schema", "1.1", "add", "Buy milk")
        do {
            let db = try Database(path: cli.databasePath)
            try db.execute("INSERT INTO tags (id, name) VALUES (\("t1"), \("shopping"))")
            try db.execute("INSERT INTO reminderTags (reminderID, tagID) VALUES (\(milk), \("t1"))")
            try db.close()
        }
        try cli.succeed("--schema", "1.1", "rm", milk)
        let db = try Database(path: cli.databasePath)
        #expect(try db.count("reminderTags") == 0)
        #expect(try db.count("tags") == 1)
    }

    @Test(
        "lists rm deletes the list and its reminders, on every release, and names a list it cannot find",
        arguments: ["1.0", "1.1", "2.0"])
    func removeListTakesItsReminders(release: String) throws {
        let cli = try RemindersCLI()
        try cli.succeed("--schema", release, "add", "Buy milk", "--list", "Home")
        try cli.succeed("--schema", release, "add", "Post the letter", "--list", "Errands")
        try cli.succeed("--schema", release, "add", "Buy stamps", "--list", "Errands")
        #expect(
            try cli.succeed("--schema", release, "lists", "rm", "Errands")
                == "removed list Errands and its 2 reminder(s)")
        #expect(
            try cli.json("--schema", release, "list", "--json").compactMap { $0["title"] as? String } == ["Buy milk"])
        let missing = try cli.run(["--schema", release, "lists", "rm", "Errands"])
        #expect(missing.status == 1)
        #expect(missing.standardError.contains("no list named \"Errands\""))
        let db = try Database(path: cli.databasePath)
        #expect(try db.count("remindersLists") == 1)
        #expect(try db.fetchAll("PRAGMA foreign_key_check").isEmpty)
    }

    @Test("2.1: lists add --owner, share and unshare write the owner and the members; older releases refuse them")
    func listsAreOwnedAndShared() throws {
        let cli = try RemindersCLI()
        let id = try cli.succeed("lists", "add", "Groceries", "--owner", "alice")
        #expect(try cli.succeed("lists", "share", "Groceries", "--with", "bob") == "shared list Groceries with bob")
        #expect(
            try cli.succeed("lists", "share", "Groceries", "--with", "bob")
                == "list Groceries was already shared with bob")
        try cli.succeed("lists", "share", "Groceries", "--with", "carol")
        let shown = try cli.succeed("lists")
        #expect(shown.contains("OWNER") && shown.contains("SHARED WITH"))
        #expect(shown.contains("alice  bob, carol"))
        #expect(
            try cli.succeed("lists", "unshare", "Groceries", "--with", "bob")
                == "list Groceries is no longer shared with bob")
        let db = try Database(path: cli.databasePath)
        #expect(try db.fetchValue(String.self, "SELECT ownerID FROM remindersLists WHERE id = \(id)") == "alice")
        #expect(try db.fetchAll(String.self, "SELECT userID FROM listMembers") == ["carol"])
        try db.close()

        let missing = try cli.run("lists", "share", "Groceries")
        #expect(missing.status == 2 && missing.standardError.contains("lists share needs --with USER"))
        let unknown = try cli.run("lists", "share", "Errands", "--with", "bob")
        #expect(unknown.status == 1 && unknown.standardError.contains("no list named \"Errands\""))
        let old = try RemindersCLI()
        let refused = try old.run("--schema", "2.0", "lists", "add", "Home", "--owner", "alice")
        #expect(refused.status == 2 && refused.standardError.contains("--owner needs schema 2.1 or later"))
        #expect(try old.succeed("--schema", "2.0", "lists").contains("OWNER") == false)
    }

    // Regression: nothing showed changes from other devices waiting in the stash or refused here.
    @Test("status shows what waits in the stash and what this store refused from other devices")
    func statusShowsStashedAndRefusedIncomingChanges() throws {
        let cli = try RemindersCLI()
        try cli.succeed("lists", "add", "Home")
        do {
            let db = try Database(path: cli.databasePath)
            let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            let other = Data(repeating: 7, count: 16)
            let clock = ChangeClock(validMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)
            _ = try log.apply(
                [
                    IncomingChange(
                        table: "remindersLists", primaryKey: ["id": .text("X")], operation: .insert,
                        columns: ["id": .text("X"), "name": .integer(5)], clock: clock, siteID: other),
                    IncomingChange(
                        table: "comments", primaryKey: ["id": .text("C")], operation: .insert,
                        columns: ["id": .text("C"), "body": .text("a table of a later release")], clock: clock,
                        siteID: other),
                ], to: db)
            try db.close()
        }
        let outcome = try cli.run("status", "--json")
        let status = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        #expect(status["stashedChanges"] as? Int == 1)
        #expect((status["refusedOutgoingChanges"] as? [Any])?.isEmpty == true)
        let refused = try #require(status["refusedIncomingChanges"] as? [[String: Any]])
        #expect(refused.count == 1)
        #expect(refused.first?["table"] as? String == "remindersLists")
        #expect(refused.first?["operation"] as? String == "insert")
        #expect((refused.first?["reason"] as? String)?.contains("STRICT") == true)
        let text = try cli.succeed("status")
        #expect(text.contains("1 change(s) from other devices waiting for a newer schema or their parent row"))
        #expect(text.contains("refused here (insert of remindersLists from another device)"))
    }

    @Test("--help prints the usage on stdout and exits 0")
    func helpPrintsUsage() throws {
        let cli = try RemindersCLI()
        let outcome = try cli.run(databaseArguments: ["--help"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("usage: reminders --db PATH"))
        #expect(outcome.standardError.isEmpty)
    }
}

/// Runs the built `reminders` executable on a database of its own temporary directory.
private struct RemindersCLI {
    struct Outcome {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    let directory: TemporaryDirectory
    let databasePath: String
    let executable: URL

    init() throws {
        directory = try TemporaryDirectory()
        databasePath = directory.path("reminders.sqlite")
        executable = try builtProduct("reminders")
    }

    /// Runs `reminders --db <this test's database> arguments…`.
    func run(_ arguments: String...) throws -> Outcome {
        try run(arguments)
    }

    func run(_ arguments: [String]) throws -> Outcome {
        try run(databaseArguments: ["--db", databasePath] + arguments)
    }

    /// Runs `reminders arguments…` as given. Output goes to files, not pipes, so a large output
    /// can never fill a pipe and block the child while the test waits for it to exit.
    func run(databaseArguments arguments: [String]) throws -> Outcome {
        let outputPath = directory.path("stdout-\(UUID().uuidString)")
        let errorPath = directory.path("stderr-\(UUID().uuidString)")
        try Data().write(to: URL(fileURLWithPath: outputPath))
        try Data().write(to: URL(fileURLWithPath: errorPath))
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let error = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = error
        try process.run()
        process.waitUntilExit()
        try output.close()
        try error.close()
        return Outcome(
            status: process.terminationStatus,
            standardOutput: try String(contentsOfFile: outputPath, encoding: .utf8),
            standardError: try String(contentsOfFile: errorPath, encoding: .utf8))
    }

    /// Runs a command that must succeed and returns its output without the final newline.
    @discardableResult
    func succeed(_ arguments: String...) throws -> String {
        let outcome = try run(arguments)
        try #require(outcome.status == 0, "reminders \(arguments.joined(separator: " ")): \(outcome.standardError)")
        #expect(outcome.standardError.isEmpty)
        return outcome.standardOutput.hasSuffix("\n")
            ? String(outcome.standardOutput.dropLast()) : outcome.standardOutput
    }

    /// Runs a command that must succeed and print a JSON array of objects.
    func json(_ arguments: String...) throws -> [[String: Any]] {
        let outcome = try run(arguments)
        try #require(outcome.status == 0, "reminders \(arguments.joined(separator: " ")): \(outcome.standardError)")
        let parsed = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8))
        return try #require(parsed as? [[String: Any]], "not an array of objects: \(outcome.standardOutput)")
    }
}
