import OfflineStore
import RemindersModel

/// Opens the database as the simulated release would: creates it or upgrades it to the
/// release's schema with the Reminders migration plan, and refuses a file a newer release wrote.
enum ReminderStore {
    static func open(path: String, release: AppRelease) throws -> Database {
        var configuration = Configuration()
        configuration.logHandler = StandardErrorLogHandler(label: "reminders", minimumLevel: .warning)
        let db: Database
        do {
            db = try Database(path: path, configuration: configuration)
        } catch {
            throw CommandFailure.runtime("cannot open \(path): \(error)")
        }
        do {
            try migrate(db, path: path, release: release)
        } catch {
            try? db.close()
            throw error
        }
        return db
    }

    private static func migrate(_ db: Database, path: String, release: AppRelease) throws {
        var options = Migrator.Options()
        let progressLine = StandardError.isTerminal ? MigrationProgressLine() : nil
        defer { progressLine?.finish() }
        if let progressLine {
            options.progress = { progress in progressLine.report(progress) }
        }
        let migrator = try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: release.version, options: options)
        let releaseName = "release \(AppRelease.shortForm(release.version))"
        do {
            try migrator.migrate(db)
        } catch {
            guard error.kind == .databaseNewerThanPlan else {
                throw CommandFailure.runtime(
                    "cannot bring \(path) to schema \(release.version) (\(releaseName)): \(error)")
            }
            let fileVersion = (try? migrator.currentVersion(db)).map { " \($0)" } ?? ""
            throw CommandFailure.runtime(
                "\(path) is at schema\(fileVersion), written by a newer release of the app; \(releaseName) knows "
                    + "schemas up to \(release.version) and will not open it. Nothing was modified: open it with a "
                    + "newer --schema (the latest is \(AppRelease.shortForm(AppRelease.latest.version))).")
        }
    }
}
