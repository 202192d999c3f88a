import CommandLineTool
import Foundation
import OfflineStore

/// `ostore rescan --db PATH`: records in the change log every row of every synced table, and as
/// deleted every row the log believes exists but the file lacks — what a store does by itself when
/// it finds its log behind its data.
enum RescanCommand: Command {
    static let name = "rescan"
    static let synopsis = "--db PATH"
    static let summary = "Record every row of the synced tables in the change log again (after outside edits)."
    static let options = [CommandOption(name: "--db", valueName: "PATH", help: "the database (opened for writing)")]
    static let details = """
        Use it after editing the database with another program while the app was not running, or when
        ostore check reports a gap. Every row is recorded as changed now, so this store's values win the
        next sync; nothing is deleted except rows already gone from the file.

        exit status: 0 ok, 2 usage error, no change log, or unwritable database
        """

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        guard let path = arguments.values["--db"], arguments.positionals.isEmpty else {
            Console.error(
                "ostore rescan: give the database with --db PATH and nothing else\nusage: ostore rescan \(synopsis)")
            return .failure
        }
        guard FileManager.default.fileExists(atPath: path) else {
            Console.error("ostore rescan: no such database \(path)")
            return .failure
        }
        do {
            let db = try Database(path: path)
            let log = try ChangeLog.openForMaintenance(db)
            let report = try log.reconcileCoverage(db, forceRescan: true)
            Console.output("recorded \(report.rescannedRows) row change(s); \(try log.pendingCount(db)) pending")
            return .success
        } catch {
            Console.error("ostore rescan: \(error)")
            return .failure
        }
    }
}
