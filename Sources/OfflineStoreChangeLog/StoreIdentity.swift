import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// Who a store is: a store id shared by the user's database and its metadatabase (so a
/// metadatabase is never used with another store's file), and the site id of this device (the
/// tiebreak of last-writer-wins merges). Both are random UUIDs made once.
public struct StoreIdentity: Sendable, Hashable {
    /// What ``Metadatabase/attach(to:)`` found.
    public enum State: String, Sendable, Hashable {
        /// Neither file had an identity: a new store.
        case created
        /// Both files carry the same identity.
        case intact
        /// The user's database kept its identity but the metadatabase was missing (purged): a new
        /// metadatabase was made for the same store with a new site id, since the old site's clock
        /// and log are gone; the rows in the database are all kept, and recorded as the oldest
        /// possible changes, so a sync uploads what no one else has and never overwrites newer
        /// versions from other devices.
        case metadatabaseRecreated
        /// The metadatabase kept its identity but the user's database had none (purged and
        /// recreated, or a new file): the database takes the metadatabase's identity. The rows the
        /// metadatabase described are gone, so it forgets what it knew of their values, once, in
        /// the same transaction: every sync cursor is cleared (the next sync of any engine, in this
        /// run or a later one, downloads the dataset again), deletions are kept as they are, and
        /// every other entry becomes the oldest possible version. Queued deletes are still pushed;
        /// queued inserts and updates cannot be, since their values lived only in the purged file,
        /// and the rows come back as other devices last saw them. Keeping the versions of lost
        /// values would make this device refuse other devices' edits older than them and diverge.
        case databaseRecreated
    }

    public var storeID: String
    public var siteID: Data
    public var state: State
    /// The clock's persisted high-water mark.
    package var lastClock: ChangeClock

    static let mainTableName = "ostore_store_identity"

    static func reconcile(_ db: Database) throws -> StoreIdentity {
        try db.transaction(.immediate) { db in
            try db.execute(
                """
                CREATE TABLE IF NOT EXISTS main.\(identifier: mainTableName) (
                    id INTEGER PRIMARY KEY CHECK (id = 1), storeID TEXT NOT NULL) STRICT
                """)
            let mainStoreID = try db.fetchValue(
                String.self, "SELECT storeID FROM main.\(identifier: mainTableName) WHERE id = 1")
            let meta = try db.fetchOne(
                "SELECT storeID, siteID, lastClock FROM \(identifier: Metadatabase.schemaName).ostore_store WHERE id = 1"
            )
            let metaStoreID: String? = try meta?.decode(at: 0)
            let state: State
            switch (mainStoreID, metaStoreID) {
            case (nil, nil):
                state = .created
                let storeID = UUID().uuidString
                try db.execute("INSERT INTO main.\(identifier: mainTableName) (id, storeID) VALUES (1, \(storeID))")
                try insertMetaRecord(db, storeID: storeID)
            case (let storeID?, nil):
                state = .metadatabaseRecreated
                try insertMetaRecord(db, storeID: storeID)
            case (nil, let storeID?):
                state = .databaseRecreated
                try db.execute("INSERT INTO main.\(identifier: mainTableName) (id, storeID) VALUES (1, \(storeID))")
                try forgetRowsOfPurgedDatabase(db)
            case (let mainID?, let metaID?) where mainID == metaID:
                state = .intact
            case (let mainID?, let metaID?):
                throw ChangeLogError(
                    .metadatabase,
                    "the metadatabase \(Metadatabase.path(forDatabaseAt: db.path)) belongs to store \(metaID), "
                        + "but the database is store \(mainID)",
                    fix: "a metadatabase was copied or restored beside the wrong database: move it away (nothing "
                        + "was modified); the store then rebuilds its metadatabase")
            }
            let record = try db.fetchOne(
                "SELECT storeID, siteID, lastClock FROM \(identifier: Metadatabase.schemaName).ostore_store WHERE id = 1"
            )
            guard let record else {
                throw ChangeLogError(.metadatabase, "the metadatabase has no store record after reconciliation")
            }
            return StoreIdentity(
                storeID: try record.decode(at: 0), siteID: try record.decode(at: 1), state: state,
                lastClock: ChangeClock(packed: try record.decode(at: 2)) ?? .zero)
        }
    }

    /// See ``State/databaseRecreated``: what stays true without the rows is which rows were
    /// deleted, by whom and when, so deletions stay as they are and nothing deleted comes back.
    /// The other entries are made the oldest possible versions, as if this site had received them
    /// at clock 0: any version from elsewhere wins over them, and they leave the push queue (the
    /// apply counts a column's version at clock 0 as none, so the row's creation dates the column
    /// again, as on a site that never had the lost edit: ``ChangeLog``'s column merge). They
    /// are rewritten, not deleted, because a log entry's place in the queue is its rowid, one more
    /// than the largest: deleting the newest entries would hand their places, already
    /// acknowledged by the server, to the next local changes, which would then never be pushed.
    private static func forgetRowsOfPurgedDatabase(_ db: Database) throws {
        let meta = Metadatabase.schemaName
        guard
            let siteID = try db.fetchValue(
                Data.self, "SELECT siteID FROM \(identifier: meta).ostore_store WHERE id = 1")
        else { return }
        // Changes still in the journal describe the purged rows too.
        try ChangeJournal.fold(db, meta: meta)
        try db.execute("INSERT OR IGNORE INTO \(identifier: meta).ostore_sites (siteID) VALUES (\(siteID))")
        try db.execute(
            """
            UPDATE \(identifier: meta).ostore_changes
            SET clock = 0, site = (SELECT id FROM \(identifier: meta).ostore_sites WHERE siteID = \(siteID))
            WHERE columnName <> \(LoggedColumn.deletion.stored)
            """)
        try db.execute("UPDATE \(identifier: meta).ostore_sync SET cursor = NULL")
    }

    private static func insertMetaRecord(_ db: Database, storeID: String) throws {
        var siteID = Data(count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in siteID.indices { siteID[index] = UInt8.random(in: 0...255, using: &generator) }
        try db.execute(
            """
            INSERT INTO \(identifier: Metadatabase.schemaName).ostore_store (id, storeID, siteID, createdAt, lastClock)
            VALUES (1, \(storeID), \(siteID), \(Date()), 0)
            """)
    }
}
