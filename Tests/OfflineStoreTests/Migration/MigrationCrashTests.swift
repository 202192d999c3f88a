import Foundation
import OfflineStore
import RemindersModel
import Testing

/// kill -9 at random points of a real migration: the file must always open intact at exactly one
/// declared version and finish the migration on the next open with every row present.
@Suite("Crashes and concurrent processes during migration")
struct MigrationCrashTests {
    static let rowCount = 100_000
    static let killPoints = 50

    @Test(.timeLimit(.minutes(10)))
    func killingTheMigratingProcessAtRandomPointsNeverLosesARow() throws {
        let directory = try TemporaryDirectory()
        let template = directory.path("template.sqlite")
        try Self.makeDatabaseAtVersion1Point1(at: template, rows: Self.rowCount)
        let reminders = try builtProduct("reminders")

        // How long an uninterrupted migration takes, to spread the kill points over it.
        let baselinePath = directory.path("baseline.sqlite")
        try FileManager.default.copyItem(atPath: template, toPath: baselinePath)
        let started = Date()
        let baseline = try runToCompletion(reminders, ["--db", baselinePath, "lists"])
        let migrationSeconds = Date().timeIntervalSince(started)
        #expect(baseline == 0)

        var generator = SystemRandomNumberGenerator()
        var outcomes: [Schema.Version: Int] = [:]
        for point in 0..<Self.killPoints {
            let path = directory.path("crash-\(point).sqlite")
            try FileManager.default.copyItem(atPath: template, toPath: path)
            let process = Process()
            process.executableURL = reminders
            process.arguments = ["--db", path, "lists"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            Thread.sleep(forTimeInterval: Double.random(in: 0...(migrationSeconds * 1.2), using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()

            let db = try Database(path: path)
            #expect(try db.fetchValue(String.self, "PRAGMA integrity_check") == "ok", "kill point \(point)")
            let migrator = try Migrator(plan: RemindersMigrationPlan.self)
            let version = try #require(try migrator.currentVersion(db), "kill point \(point): no version")
            outcomes[version, default: 0] += 1
            let declared = try #require(RemindersMigrationPlan.schemas.first { $0.versionIdentifier == version })
            let differences = try SchemaSnapshot(liveDatabase: db).differences(toReach: try declared.snapshot())
            #expect(differences.isEmpty, "kill point \(point) at \(version): \(differences)")
            #expect(try db.count("reminders") == Self.rowCount, "kill point \(point)")

            try migrator.migrate(db)
            #expect(try migrator.currentVersion(db) == "2.1.0")
            #expect(try db.count("reminders") == Self.rowCount)
            #expect(try db.count("reminderSearch") == Self.rowCount)
            #expect(try db.fetchAll("PRAGMA foreign_key_check").isEmpty)
            try db.close()
            try FileManager.default.removeItem(atPath: path)
            try? FileManager.default.removeItem(atPath: path + "-wal")
            try? FileManager.default.removeItem(atPath: path + "-shm")
        }
        // Killed before the slow 2.0 stage committed and after the last stage: both must occur, or
        // the kill points missed the migration entirely. (Between the 2.0 and the quick 2.1 stage
        // is a moment a kill may or may not hit.)
        #expect(outcomes["1.1.0"] != nil && outcomes["2.1.0"] != nil, "versions after kill: \(outcomes)")
    }

    @Test func twoProcessesOpeningTheSameFileMigrateItOnce() throws {
        let directory = try TemporaryDirectory()
        let reminders = try builtProduct("reminders")
        for attempt in 0..<3 {
            let path = directory.path("shared-\(attempt).sqlite")
            try Self.makeDatabaseAtVersion1Point1(at: path, rows: 20_000)
            let processes = try (0..<2).map { _ in
                let process = Process()
                process.executableURL = reminders
                process.arguments = ["--db", path, "lists"]
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                return process
            }
            for process in processes {
                process.waitUntilExit()
                #expect(process.terminationStatus == 0)
            }
            let db = try Database(path: path)
            let stages = try Migrator(plan: RemindersMigrationPlan.self).appliedStages(db)
            #expect(stages.map(\.toVersion) == ["1.0.0", "1.1.0", "2.0.0", "2.1.0"])
            #expect(stages.map(\.runs) == [1, 1, 1, 1])
            #expect(try db.count("reminders") == 20_000)
            #expect(try db.count("reminderSearch") == 20_000)
        }
    }

    static func makeDatabaseAtVersion1Point1(at path: String, rows: Int) throws {
        let db = try Database(path: path)
        try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: "1.1.0").migrate(db)
        try db.transaction { db in
            try db.execute("INSERT INTO remindersLists (id, name) VALUES ('inbox', 'Inbox'), ('work', 'Work')")
            let insert = try db.makeStatement(
                "INSERT INTO reminders (id, title, listID, dueDate, priority, notes) VALUES (?, ?, ?, ?, ?, ?)")
            for index in 0..<rows {
                try insert.execute(
                    UUID().uuidString, "Reminder \(index)", index % 2 == 0 ? "inbox" : "work",
                    index % 3 == 0 ? "2026-12-\(String(format: "%02d", index % 28 + 1))" : nil, index % 10,
                    "note \(index)")
            }
        }
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try db.close()
    }

    private func runToCompletion(_ executable: URL, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
