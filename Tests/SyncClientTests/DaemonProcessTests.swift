import Foundation
import TestSupport
import Testing

/// `reminders … daemon` as a user runs it: its own process, a live server, commits made by other
/// processes, an outage, and SIGTERM.
@Suite("The sync daemon as a process")
struct DaemonProcessTests {
    @Test func itSyncsSoonAfterACommitRidesOutAnOutageAndStopsOnSIGTERM() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "reminders")
        let reminders = try builtProduct("reminders").path
        let db = directory.path("alice.sqlite")
        let output = URL(fileURLWithPath: directory.path("daemon.out"))
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let outputHandle = try FileHandle(forWritingTo: output)

        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: reminders)
        // An interval far longer than the test: every sync it makes is one a commit or a retry asked for.
        daemon.arguments = ["--db", db, "daemon", "--server", server.baseURL.absoluteString, "--interval", "600"]
        daemon.environment = ["OSTORE_TOKEN": token]
        daemon.standardOutput = outputHandle
        daemon.standardError = outputHandle
        try daemon.run()
        defer {
            if daemon.isRunning {
                kill(daemon.processIdentifier, SIGKILL)
                daemon.waitUntilExit()
            }
        }
        func printed() -> String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }
        func storedChanges() -> Int64 {
            (try? server.storage().datasets().first { $0.name == "reminders" }?.changes) ?? -1
        }

        #expect(eventually(timeout: .seconds(20)) { printed().contains("synced:") }, "\(printed())")
        // A commit by another process is pushed after the debounce, long before the interval.
        #expect(try run(reminders, ["--db", db, "lists", "add", "Home"]).status == 0)
        #expect(eventually(timeout: .seconds(15)) { storedChanges() == 1 }, "\(printed())")

        // Offline: each failure is reported and retried with backoff; the queue is kept.
        server.stop()
        #expect(try run(reminders, ["--db", db, "lists", "add", "Work"]).status == 0)
        #expect(eventually(timeout: .seconds(15)) { printed().contains("sync failed") }, "\(printed())")
        #expect(storedChanges() == 1)
        try server.startAgainOnSamePort()
        #expect(eventually(timeout: .seconds(30)) { storedChanges() == 2 }, "\(printed())")

        kill(daemon.processIdentifier, SIGTERM)
        #expect(eventually(timeout: .seconds(10)) { !daemon.isRunning })
        daemon.waitUntilExit()
        #expect(daemon.terminationReason == .exit && daemon.terminationStatus == 0)
        #expect(printed().hasSuffix("stopped\n"), "\(printed())")
        #expect(!printed().contains(token))
    }
}
