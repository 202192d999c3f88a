import Foundation

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
        /// recreated, or a new file): the database takes the metadatabase's identity; nothing in
        /// the metadatabase is dropped.
        case databaseRecreated
    }

    public var storeID: String
    public var siteID: Data
    public var state: State
    /// The clock's persisted high-water mark.
    public var lastClock: HybridTimestamp

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
                lastClock: HybridTimestamp(packed: try record.decode(at: 2)) ?? .zero)
        }
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
