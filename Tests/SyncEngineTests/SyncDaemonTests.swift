import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import SyncServer
import TestSupport
import Testing

@Suite("Sync daemon")
struct SyncDaemonTests {
    @Test func aCommitFromAnotherProcessIsSyncedSoonAndOfflineSpellsBackOff() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("server")))
        try storage.createDataset(named: "family")
        let token = try storage.createToken(dataset: "family", readOnly: false).secret
        let transport = InProcessTransport(service: SyncService(storage: storage))

        let path = directory.path("alice.sqlite")
        let db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        var engineConfiguration = SyncEngine.Configuration(
            server: URL(string: "http://sync.invalid")!, dataset: "family", token: token)
        engineConfiguration.retry.maximumAttempts = 1
        let engine = SyncEngine(db: db, log: log, transport: transport, configuration: engineConfiguration)
        var configuration = SyncDaemon.Configuration()
        configuration.interval = 3_600  // only commits and back-off make it sync again
        configuration.debounce = 0.2
        configuration.pollInterval = 0.02
        configuration.retry.initialDelay = 0.05
        configuration.retry.maximumDelay = 0.1
        let daemon = SyncDaemon(engine: engine, db: db, log: log, configuration: configuration)

        // Another connection, as another process (the CLI) would write.
        let writer = try Database(path: path)
        _ = try ChangeLog.open(writer, migrator: try Migrator(plan: RemindersMigrationPlan.self))

        var statuses: [DaemonStatus] = []
        var wroteAt: Date?
        var failedWhileOffline = 0
        let deadline = Date().addingTimeInterval(20)
        daemon.run(
            until: {
                if Date() > deadline { return true }
                if statuses.count == 1, wroteAt == nil {
                    transport.failNext(3)
                    try? writer.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
                    wroteAt = Date()
                }
                return (try? storage.datasets().first?.changes) == 1
            },
            report: { status in
                statuses.append(status)
                if status.lastError != nil { failedWhileOffline += 1 }
            })
        #expect(try storage.datasets().first?.changes == 1)
        #expect(failedWhileOffline == 3)
        #expect(statuses.last?.consecutiveFailures == 0 && statuses.last?.pendingChanges == 0)
        // Synced after the debounce and the back-off, long before the hour-long interval.
        #expect(wroteAt.map { Date().timeIntervalSince($0) < 10 } == true)
    }
}
