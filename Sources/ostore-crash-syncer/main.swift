import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import Synchronization

// ostore-crash-syncer: the child process of the randomised convergence tests' child syncs. It
// opens a Reminders store as the 2.0 app does (upgrading one an older release wrote), syncs it
// once as the app does (with its derivations after every pulled page), and kills itself with
// SIGKILL at its `--kill-at`th write: a row written, or a transaction about to commit, on the
// store's connection. A sync that ends first prints "synced WRITES" and exits 0; one that fails
// prints "failed WRITES: ERROR" and exits 3. Not a user tool.
//
// usage: ostore-crash-syncer --db PATH --server URL --dataset NAME --batch N --page N --kill-at N
//        (the token in OSTORE_TOKEN)

/// Counts the connection's writes from the hooks' threads and kills the process at the chosen one.
final class KillSwitch: Sendable {
    private let writes = Atomic<Int>(0)
    private let killAt: Int

    init(killAt: Int) { self.killAt = killAt }

    var count: Int { writes.load(ordering: .relaxed) }

    /// One more write; the chosen one never returns.
    func write() {
        let count = writes.add(1, ordering: .relaxed).newValue
        if count == killAt { kill(getpid(), SIGKILL) }
    }
}

func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("ostore-crash-syncer: \(message)\n".utf8))
    exit(status)
}

var options: [String: String] = [:]
var rest = CommandLine.arguments.dropFirst()
while let name = rest.popFirst() {
    guard name.hasPrefix("--"), let value = rest.popFirst() else { fail("usage: see the source", status: 2) }
    options[String(name.dropFirst(2))] = value
}
guard let path = options["db"], let server = options["server"].flatMap(URL.init(string:)),
    let dataset = options["dataset"], let batch = options["batch"].flatMap(Int.init),
    let page = options["page"].flatMap(Int.init), let killAt = options["kill-at"].flatMap(Int.init),
    let token = ProcessInfo.processInfo.environment["OSTORE_TOKEN"]
else { fail("usage: see the source", status: 2) }

let killSwitch = KillSwitch(killAt: killAt)
do {
    let db = try Database(path: path)
    db.setUpdateHook { _ in killSwitch.write() }
    db.setCommitHook {
        killSwitch.write()
        return true
    }
    let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
    var configuration = SyncEngine.Configuration(server: server, dataset: dataset, token: token)
    configuration.pushBatchSize = batch
    configuration.pullPageSize = page
    configuration.retry = RetryPolicy(maximumAttempts: 4)
    configuration.retry.sleep = { _ in }
    let transport = try HTTPClient(
        configuration: HTTPClient.Configuration(connectTimeout: .seconds(2), totalTimeout: .milliseconds(300)))
    let engine = SyncEngine(db: db, log: log, transport: transport, configuration: configuration)
    engine.afterApplyingChanges = ReleaseTwoDerivations.apply
    do {
        _ = try engine.sync()
    } catch {
        print("failed \(killSwitch.count): \(error)")
        exit(3)
    }
    try db.close()
    print("synced \(killSwitch.count)")
} catch {
    fail("\(error)", status: 1)
}
