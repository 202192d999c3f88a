import Foundation
import OfflineStore
import RemindersModel
import Testing

@testable import OfflineStoreChangeLog

@Suite("Change log coverage")
struct LogCoverageTests {
    let directory: TemporaryDirectory
    let path: String
    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("reminders.sqlite")
    }

    func open() throws -> (Database, ChangeLog) {
        let db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        return (db, log)
    }

    func pendingSummary(_ db: Database, _ log: ChangeLog) throws -> [String] {
        try log.pendingChanges(db, limit: 1_000).map { change in
            "\(change.operation.rawValue) \(change.table) \(change.primaryKey.values.map { "\($0)" }.joined())"
        }.sorted()
    }

    func checkpointAndClose(_ db: Database) throws {
        try db.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")
        try db.execute("PRAGMA ostore_meta.wal_checkpoint(TRUNCATE)")
        try db.close()
    }

    /// Another process writing while this one installs tracking (seen in CI as a failed `reminders`
    /// run when two processes opened one file): installing the permanent triggers read the schema,
    /// then wrote in the same deferred transaction, and once the other writer had committed that
    /// read was stale, which SQLite refuses at once (`SQLITE_BUSY`) instead of waiting.
    @Test func installingTrackingWhileAnotherProcessWritesWaitsForItInsteadOfFailing() throws {
        let (db, log) = try open()
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        // The shell waits for the lock: without a busy timeout its BEGIN IMMEDIATE failed at once
        // when it came while the probe below held the lock for a moment, and it then slept without
        // it (seen once in CI: "the sqlite3 shell ended before it was seen holding the write lock").
        shell.arguments = [
            path, ".timeout 5000", "BEGIN IMMEDIATE",
            "INSERT INTO remindersLists (id, name) VALUES ('other', 'process')",
            ".shell sleep 1", "COMMIT",
        ]
        try shell.run()
        // Until the shell holds the write lock.
        var probe = Configuration()
        probe.busyTimeout = .zero
        let prober = try Database(path: path, configuration: probe)
        var locked = false
        while !locked, shell.isRunning {
            do {
                try prober.execute(sql: "BEGIN IMMEDIATE")
                try prober.execute(sql: "ROLLBACK")
                Thread.sleep(forTimeInterval: 0.01)
            } catch {
                locked = true
            }
        }
        try prober.close()
        try #require(locked, "the sqlite3 shell ended before it was seen holding the write lock")

        try ChangeTracker.install(on: db, schema: log.schema, clock: log.clock)
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)
        #expect(try db.fetchValue(String.self, "SELECT name FROM remindersLists WHERE id = 'other'") == "process")
        try db.close()
    }

    @Test func writesMadeWithTheSqlite3ShellAreRecordedAtTheNextOpen() throws {
        do {
            let (db, log) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('keep', 'x'), ('gone', 'y')")
            try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
            try checkpointAndClose(db)
        }
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [
            path,
            """
            INSERT INTO remindersLists (id, name) VALUES ('new', 'z');
            UPDATE remindersLists SET name = 'changed' WHERE id = 'keep';
            DELETE FROM remindersLists WHERE id = 'gone';
            """,
        ]
        try shell.run()
        shell.waitUntilExit()
        #expect(shell.terminationStatus == 0)

        let (db, log) = try open()
        #expect(try log.coversEveryChange(db))
        #expect(
            try pendingSummary(db, log) == [
                "delete remindersLists text(\"gone\")", "insert remindersLists text(\"keep\")",
                "insert remindersLists text(\"new\")",
            ])
        let keep = try #require(try log.pendingChanges(db).first { $0.primaryKey["id"] == .text("keep") })
        #expect(keep.columns["name"] == .text("changed"))
    }

    /// Commits `change` with tracking, then puts back the metadatabase as it was before, as if the
    /// process died after `main` committed and before the metadatabase did; returns what is pending
    /// after the next open.
    func pendingAfterLosingTheLogOf(_ change: SQL) throws -> [String] {
        let backup = directory.path("meta-backup")
        do {
            let (db, _) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')")
            try checkpointAndClose(db)
        }
        try FileManager.default.copyItem(atPath: path + "-ostore-meta", toPath: backup)
        do {
            let (db, _) = try open()
            try db.execute(change)
            try checkpointAndClose(db)
        }
        try FileManager.default.removeItem(atPath: path + "-ostore-meta")
        try FileManager.default.copyItem(atPath: backup, toPath: path + "-ostore-meta")
        let (db, log) = try open()
        #expect(try log.coversEveryChange(db))
        return try pendingSummary(db, log)
    }

    // Regression: the insert trigger did not move the watermark, so a lost insert went unnoticed
    // (found by the crash harness).
    @Test func aLostLogOfAnInsertIsRecoveredByARescan() throws {
        #expect(
            try pendingAfterLosingTheLogOf("INSERT INTO remindersLists (id, name) VALUES ('B', 'y')") == [
                "insert remindersLists text(\"A\")", "insert remindersLists text(\"B\")",
            ])
    }

    @Test func aLostLogOfADeleteIsRecoveredByARescan() throws {
        #expect(
            try pendingAfterLosingTheLogOf("DELETE FROM remindersLists WHERE id = 'A'") == [
                "delete remindersLists text(\"A\")"
            ])
    }

    @Test func aLostLogOfAnUpdateIsRecoveredByARescan() throws {
        #expect(
            try pendingAfterLosingTheLogOf("UPDATE remindersLists SET name = 'z' WHERE id = 'A'") == [
                "insert remindersLists text(\"A\")"
            ])
    }

    /// Like `pendingAfterLosingTheLogOf`, but the transaction whose log is lost runs on the same
    /// connection as the one before it: the watermark is written once per transaction, so the
    /// connection must notice that the earlier transaction committed, and that a ROLLBACK TO
    /// undid its write.
    func pendingAfterLosingTheLogOfALaterTransaction(_ change: (Database) throws -> Void) throws -> [String] {
        let backup = directory.path("meta-backup")
        do {
            let (db, log) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')")
            try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
            try db.execute("PRAGMA ostore_meta.wal_checkpoint(TRUNCATE)")
            try FileManager.default.copyItem(atPath: path + "-ostore-meta", toPath: backup)
            try change(db)
            try checkpointAndClose(db)
        }
        try FileManager.default.removeItem(atPath: path + "-ostore-meta")
        try FileManager.default.copyItem(atPath: backup, toPath: path + "-ostore-meta")
        let (db, log) = try open()
        #expect(try log.coversEveryChange(db))
        return try pendingSummary(db, log)
    }

    @Test func aLostLogOfTheNextTransactionOnTheSameConnectionIsRecoveredByARescan() throws {
        #expect(
            try pendingAfterLosingTheLogOfALaterTransaction { db in
                try db.execute("UPDATE remindersLists SET name = 'z' WHERE id = 'A'")
            } == ["insert remindersLists text(\"A\")"])
    }

    @Test func aWatermarkUndoneByRollbackToIsWrittenAgain() throws {
        #expect(
            try pendingAfterLosingTheLogOfALaterTransaction { db in
                try db.transaction { db in
                    try? db.savepoint { db in
                        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('B', 'y')")
                        throw CancellationError()
                    }
                    try db.execute("INSERT INTO remindersLists (id, name) VALUES ('C', 'z')")
                }
            } == ["insert remindersLists text(\"A\")", "insert remindersLists text(\"C\")"])
    }

    @Test func aPurgedMetadatabaseRecordsEveryRowAgainAndAPurgedDatabaseInventsNoDeletes() throws {
        do {
            let (db, log) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x'), ('B', 'y')")
            try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
            try checkpointAndClose(db)
        }
        try FileManager.default.removeItem(atPath: path + "-ostore-meta")
        do {
            let (db, log) = try open()
            #expect(log.identity.state == .metadatabaseRecreated)
            #expect(
                try pendingSummary(db, log) == [
                    "insert remindersLists text(\"A\")", "insert remindersLists text(\"B\")",
                ])
            try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
            try checkpointAndClose(db)
        }
        try FileManager.default.removeItem(atPath: path)
        let (db, log) = try open()
        #expect(log.identity.state == .databaseRecreated)
        #expect(try pendingSummary(db, log).isEmpty)
        #expect(try log.coversEveryChange(db))
    }

    @Test func aForcedRescanRecordsEveryRow() throws {
        let (db, log) = try open()
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')")
        try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
        let report = try log.reconcileCoverage(db, forceRescan: true)
        #expect(report.rescanned && report.rescannedRows == 1)
        #expect(try pendingSummary(db, log) == ["insert remindersLists text(\"A\")"])
    }

    /// The permanent triggers skip a write when `sqlite_compileoption_used('ostore:change-tracking')`
    /// answers 1: only a connection with tracking installed may answer so, and every other
    /// question must still get the built-in's answer.
    @Test func onlyATrackedConnectionAnswersTheTrackingProbe() throws {
        let probe = "SELECT sqlite_compileoption_used('ostore:change-tracking')"
        let (db, _) = try open()
        let plain = try Database(path: path)
        #expect(try db.fetchValue(Int.self, SQL(sql: probe)) == 1)
        #expect(try plain.fetchValue(Int.self, SQL(sql: probe)) == 0)
        for option in ["THREADSAFE", "SQLITE_THREADSAFE", "ENABLE_FTS5", "OMIT_EVERYTHING"] {
            let real: SQL = "SELECT sqlite_compileoption_used(\(option))"
            #expect(try db.fetchValue(Int.self, real) == plain.fetchValue(Int.self, real), "\(option)")
        }
        #expect(try db.fetchValue(Int.self, "SELECT sqlite_compileoption_used(NULL) IS NULL") == 1)
        try plain.close()

        let shell = Process()
        let output = Pipe()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [path, probe]
        shell.standardOutput = output
        try shell.run()
        shell.waitUntilExit()
        let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(answer.trimmingCharacters(in: .whitespacesAndNewlines) == "0")
    }

    @Test func ostoreCheckReportsOutsideWritesAndOstoreRescanRecordsThem() throws {
        do {
            let (db, log) = try open()
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('A', 'x')")
            try log.markPushed(db, upTo: try log.pendingChanges(db).last!.sequence)
            try checkpointAndClose(db)
        }
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        shell.arguments = [path, "INSERT INTO remindersLists (id, name) VALUES ('B', 'y')"]
        try shell.run()
        shell.waitUntilExit()

        let gap = try runOstore(["check", "--db", path])
        #expect(gap.status == 1)
        #expect(gap.output.contains("1 row change(s) made by another program"))
        let rescan = try runOstore(["rescan", "--db", path])
        #expect(rescan.status == 0, "\(rescan.error)")
        #expect(rescan.output.contains("recorded 2 row change(s); 2 pending"))
        let clean = try runOstore(["check", "--db", path])
        #expect(clean.status == 0, "\(clean.output)")
        #expect(try runOstore(["rescan", "--db", directory.path("missing.sqlite")]).status == 2)
    }
}
