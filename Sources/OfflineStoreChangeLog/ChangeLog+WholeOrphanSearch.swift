import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// The TEMP table whose presence on a connection asks its next batch for the whole search
    /// (``markWholeOrphanSearch(_:)``).
    static let wholeOrphanSearchMark = "ostore_whole_orphan_search"

    /// Asks the connection's next applied batch to search every child table whole and run
    /// `foreign_key_check`, once: ``reconcileCoverage(_:forceRescan:)`` found rows written outside
    /// the store (the `sqlite3` shell, with keys off), which nothing proved and which may be
    /// orphans no batch's rows lead to. The mark is a TEMP table, so it lasts as long as the
    /// connection (the metadatabase has no place for it without a new version of its layout): a
    /// process that ends before applying a batch after the reconciliation forgets it, and such an
    /// orphan then stays until a migration's `foreign_key_check` reports it. Writes outside the
    /// store to tables that do not sync are not noted at all (see ``LogCoverage``).
    static func markWholeOrphanSearch(_ db: Database) throws {
        try db.execute(sql: "CREATE TEMP TABLE IF NOT EXISTS \(quoteIdentifier(wholeOrphanSearchMark)) (unused)")
    }

    static func isWholeOrphanSearchMarked(_ db: Database) throws -> Bool {
        try db.fetchValue(
            Bool.self,
            "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE type = 'table' AND name = \(wholeOrphanSearchMark))"
        ) ?? false
    }
}
