import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Writes one version into the keyed log through `statement` (``recordVersionSQL``): a new
    /// entry, or the entry of that row and column dated again and moved to the end of the queue.
    static func recordVersion(
        _ statement: Statement, _ tableID: Int, _ key: DatabaseValue, _ entry: LoggedColumn, _ clock: ChangeClock,
        _ site: Int
    ) throws {
        try statement.bind(.integer(Int64(tableID)), toParameter: 1)
        try statement.bind(key, toParameter: 2)
        try statement.bind(.text(entry.stored), toParameter: 3)
        try statement.bind(.integer(clock.packed), toParameter: 4)
        try statement.bind(.integer(Int64(site)), toParameter: 5)
        try statement.runToCompletion(arguments: nil)
    }

    /// ``recordVersion(_:_:_:_:_:_:)`` through the connection's cached statement.
    func recordVersion(
        _ tableID: Int, _ key: DatabaseValue, _ entry: LoggedColumn, _ clock: ChangeClock, _ site: Int, _ db: Database
    ) throws {
        try Self.recordVersion(db.cachedStatement(Self.recordVersionSQL), tableID, key, entry, clock, site)
    }

    /// A fixed text with every value bound: written for each applied change, it is neither built
    /// nor parsed again.
    static let recordVersionSQL = """
        INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site) VALUES (?, ?, ?, ?, ?)
        ON CONFLICT (tableID, pk, columnName) DO UPDATE
            SET clock = excluded.clock, site = excluded.site, seq = excluded.seq
        """

    /// Deletes a row's column versions from the log (`?1` the table's number, `?2` the key as the
    /// log stores it), keeping its creation and deletion versions.
    static let forgetColumnVersionsSQL = """
        DELETE FROM ostore_meta.ostore_changes WHERE tableID = ?1 AND pk = ?2
            AND columnName NOT IN (\(LoggedColumn.creation.sqlLiteral), \(LoggedColumn.deletion.sqlLiteral))
        """

    /// The table's number in `ostore_tables`, made when the log first records one of its rows.
    func trackedTableID(_ name: String, _ db: Database) throws -> Int {
        try db.execute("INSERT OR IGNORE INTO ostore_meta.ostore_tables (name) VALUES (\(name))")
        return try db.fetchValue(Int.self, "SELECT id FROM ostore_meta.ostore_tables WHERE name = \(name)") ?? 0
    }

    /// The site's number in `ostore_sites`. This store's own id gets a number too (never 0, which
    /// means "written here, to be pushed"): a change of ours that comes back from the server (a
    /// snapshot after the database was purged) is applied like any other and must not be queued
    /// for pushing again.
    func siteNumber(_ siteID: Data, _ db: Database) throws -> Int {
        try db.execute("INSERT OR IGNORE INTO ostore_meta.ostore_sites (siteID) VALUES (\(siteID))")
        return try db.fetchValue(Int.self, "SELECT id FROM ostore_meta.ostore_sites WHERE siteID = \(siteID)") ?? 0
    }
}
