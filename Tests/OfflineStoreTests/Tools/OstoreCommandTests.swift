import Foundation
import OfflineStore
import RemindersModel
import Testing

/// What a run of the `ostore` executable printed and how it exited.
struct CommandRun {
    var status: Int32
    var output: String
    var error: String
}

/// Runs the built `ostore` with `arguments` and waits for it.
func runOstore(_ arguments: [String]) throws -> CommandRun {
    let process = Process()
    process.executableURL = try builtProduct("ostore")
    process.arguments = arguments
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return CommandRun(
        status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
        error: String(decoding: errorData, as: UTF8.self))
}

@Suite("ostore command")
struct OstoreCommandTests {
    @Test func helpListsCommandsAndRules() throws {
        let general = try runOstore(["--help"])
        #expect(general.status == 0)
        #expect(general.output.contains("lint"))
        let lint = try runOstore(["lint", "--help"])
        #expect(lint.status == 0)
        #expect(lint.output.hasPrefix("usage: ostore lint [--db PATH] FILE.sql..."))
        for rule in LintRule.all {
            #expect(lint.output.contains("\(rule.id) (\(rule.severity.rawValue))"))
        }
    }

    @Test func lintPrintsFindingsWithFixesAndExitsWithOne() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("002-tags.sql")
        try """
        CREATE TABLE IF NOT EXISTS tags (id TEXT PRIMARY KEY NOT NULL);

        ALTER TABLE notes DROP COLUMN legacy;
        CREATE INDEX tags_by_id ON tags (id);
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let run = try runOstore(["lint", path])
        #expect(run.status == 1)
        #expect(
            run.output.split(separator: "\n").map(String.init) == [
                #"\#(path):3: drop-column: ALTER TABLE "notes" drops column "legacy" and its data"#,
                "  fix: \(LintRule.dropColumn.fix)",
                #"\#(path):4: create-without-if-not-exists: CREATE INDEX "tags_by_id" has no IF NOT EXISTS; it fails where the index exists"#,
                "  fix: \(LintRule.createWithoutIfNotExists.fix)",
            ])
        #expect(run.error == "ostore lint: 2 findings (1 never, 1 warning) in 1 file\n")
    }

    @Test func cleanFilesExitWithZero() throws {
        let directory = try TemporaryDirectory()
        let first = directory.path("001.sql")
        let second = directory.path("002.sql")
        try "CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY NOT NULL, body TEXT);"
            .write(toFile: first, atomically: true, encoding: .utf8)
        try "ALTER TABLE notes ADD COLUMN title TEXT NOT NULL DEFAULT '';"
            .write(toFile: second, atomically: true, encoding: .utf8)
        let run = try runOstore(["lint", first, second])
        #expect(run.status == 0)
        #expect(run.output.isEmpty)
        #expect(run.error == "ostore lint: no findings in 2 files\n")
    }

    @Test func databaseKnowledgeRemovesFindingsItDisproves() throws {
        let directory = try TemporaryDirectory()
        let databasePath = directory.path("app.sqlite")
        let db = try Database(path: databasePath)
        try db.executeScript(
            "CREATE TABLE drafts (id TEXT); CREATE TABLE notes (id TEXT); INSERT INTO notes VALUES ('a');")
        try db.close()
        let script = directory.path("003.sql")
        try "DROP TABLE drafts;\nDROP TABLE notes;".write(toFile: script, atomically: true, encoding: .utf8)

        let standalone = try runOstore(["lint", script])
        #expect(standalone.output.components(separatedBy: "drop-table-with-rows").count - 1 == 2)
        let informed = try runOstore(["lint", "--db", databasePath, script])
        #expect(informed.status == 1)
        #expect(
            informed.output.hasPrefix(#"\#(script):2: drop-table-with-rows: DROP TABLE "notes" deletes its 1 row"#))
        #expect(!informed.output.contains("drafts"))
    }

    @Test(arguments: [
        (["lint"], "no files to lint"),
        (["lint", "--unknown", "a.sql"], "unknown option --unknown"),
        (["lint", "--db"], "--db needs a PATH"),
        (["lint", "/nonexistent/migration.sql"], "cannot read /nonexistent/migration.sql"),
        (["lint", "--db", "/nonexistent/app.sqlite", "a.sql"], "cannot open database /nonexistent/app.sqlite"),
        (["frobnicate"], "unknown command frobnicate"),
    ])
    func usageAndIOErrorsExitWithTwo(arguments: [String], message: String) throws {
        let run = try runOstore(arguments)
        #expect(run.status == 2)
        #expect(run.error.contains(message))
    }

    @Test func unterminatedSQLIsAnErrorWithItsLine() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("bad.sql")
        try "SELECT 1;\nSELECT 'oops;\n".write(toFile: path, atomically: true, encoding: .utf8)
        let run = try runOstore(["lint", path])
        #expect(run.status == 2)
        #expect(run.error.contains("\(path):2: error: unterminated string literal"))
    }

    @Test func statusPrintsTheLedgerAndThePendingStagesAsJSON() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("status.sqlite")
        try Migrator(plan: RemindersMigrationPlan.self).migrate(try Database(path: path), upTo: "1.1.0")
        let run = try runOstore(["status", "--db", path, "--json"])
        #expect(run.status == 0, "\(run.error)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(object["schemaVersion"] as? String == "1.1.0")
        #expect((object["fingerprint"] as? String)?.count == 64)
        #expect(object["structureFingerprint"] as? String == object["liveStructureFingerprint"] as? String)
        let applied = try #require(object["appliedStages"] as? [[String: Any]])
        #expect(applied.map { $0["toVersion"] as? String } == ["1.0.0", "1.1.0"])
        let pending = try #require(object["pendingStages"] as? [[String: Any]])
        #expect(pending.map { $0["toVersion"] as? String } == ["2.0.0", "2.1.0"])
        let expected = try Migrator(plan: RemindersMigrationPlan.self).pendingStages(try Database(path: path))
        #expect(pending.first?["checksum"] as? String == expected.first?.checksum)
        let text = try runOstore(["status", "--db", path])
        #expect(text.output.contains("schema version:   1.1.0"))
        #expect(text.output.contains("(this file: matches)"))
    }

    @Test func checkFindsWhatDriftedFromTheLedger() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("check.sqlite")
        let db = try Database(path: path)
        try Migrator(plan: RemindersMigrationPlan.self).migrate(db)
        let clean = try runOstore(["check", "--db", path])
        #expect(clean.status == 0, "\(clean.output)\(clean.error)")
        try db.execute("DROP INDEX reminders_listID")
        let drifted = try runOstore(["check", "--db", path])
        #expect(drifted.status == 1)
        #expect(drifted.output.contains("declared at 2.1.0 but missing or different in the file"))
        #expect(drifted.output.contains("reminders_listID"))
        #expect(try runOstore(["status", "--db", path]).output.contains("DIFFERS, run ostore check"))
        try db.execute("DROP TABLE ostore_migrations")
        let noLedger = try runOstore(["check", "--db", path])
        #expect(noLedger.status == 1)
        #expect(noLedger.output.contains("no migration ledger"))
    }

    @Test func statusAndCheckNeedAnExistingDatabase() throws {
        for command in ["status", "check"] {
            #expect(try runOstore([command]).status == 2)
            #expect(try runOstore([command, "--db", "/nonexistent/x.sqlite"]).status == 2)
        }
    }
}
