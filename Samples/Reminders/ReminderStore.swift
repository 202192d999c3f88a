import OfflineStore
import RemindersModel

/// The app's database with its change log: every write the app makes is recorded for sync.
struct OpenedStore {
    let db: Database
    let log: ChangeLog
}

/// Opens the database as the simulated release would: creates it or upgrades it to the
/// release's schema with the Reminders migration plan, refuses a file a newer release wrote, and
/// opens the change log (the metadatabase beside it, the tracking triggers).
enum ReminderStore {
    static func open(path: String, release: AppRelease) throws -> OpenedStore {
        var configuration = Configuration()
        configuration.logHandler = StandardErrorLogHandler(label: "reminders", minimumLevel: .warning)
        let db: Database
        do {
            db = try Database(path: path, configuration: configuration)
        } catch {
            throw CommandFailure.runtime("cannot open \(path): \(error)")
        }
        do {
            return OpenedStore(db: db, log: try openChangeLog(db, path: path, release: release))
        } catch {
            try? db.close()
            throw error
        }
    }

    private static func openChangeLog(_ db: Database, path: String, release: AppRelease) throws -> ChangeLog {
        var options = Migrator.Options()
        let progressLine = StandardError.isTerminal ? MigrationProgressLine() : nil
        defer { progressLine?.finish() }
        if let progressLine {
            options.progress = { progress in progressLine.report(progress) }
        }
        let migrator = try Migrator(plan: RemindersMigrationPlan.self, releasedUpTo: release.version, options: options)
        let releaseName = "release \(AppRelease.shortForm(release.version))"
        do {
            // Migrated before the change log opens: a file from a newer release is refused before
            // anything (the metadatabase included) is created or changed.
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
        return try ChangeLog.open(db, migrator: migrator)
    }
}
