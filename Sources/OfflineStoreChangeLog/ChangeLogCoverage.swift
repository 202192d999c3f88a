import Foundation
import OfflineStoreSQLite

/// Log coverage as read-only tools see it: rows written by other programs not recorded yet, and a
/// watermark in the user's file ahead of the log (a log commit lost).
package enum ChangeLogCoverage {
    /// Problems, one line each; empty when the log covers every committed change or the store has
    /// no change log.
    package static func problems(in db: Database) throws -> [String] {
        guard try db.tableExists("ostore_log_watermark"), try ChangeLogReader.summary(in: db) != nil else { return [] }
        var problems: [String] = []
        let unlogged = try db.fetchValue(Int.self, "SELECT count(*) FROM main.ostore_unlogged") ?? 0
        if unlogged > 0 {
            problems.append(
                "change log: \(unlogged) row change(s) made by another program are not in the change log yet; "
                    + "opening the store records them (or run ostore rescan)")
        }
        let staged = try ChangeLog.stageChangesWaiting(db)
        if staged > 0 {
            problems.append(
                "change log: \(staged) row change(s) a migration stage asked to record are not in the change log yet; "
                    + "opening the store records them")
        }
        let watermark = try db.fetchValue(Int64.self, "SELECT seq FROM main.ostore_log_watermark WHERE id = 1") ?? 0
        let logged = try ChangeLogReader.newestSequence(in: db) ?? 0
        if watermark > logged {
            problems.append(
                "change log: the database has changes up to log entry \(watermark) but the log ends at \(logged) "
                    + "(a crash between the two files' commits); opening the store rescans (or run ostore rescan)")
        }
        return problems
    }
}
