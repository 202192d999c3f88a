import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite

/// The metadatabase: a second SQLite file beside the user's database that holds what sync needs
/// and the user's tables must not: the store and site identity and the clock (the change log,
/// column clocks, cursors and the stash come with the tracking layer). It is named after the
/// database with `-ostore-meta` appended (`reminders.sqlite` → `reminders.sqlite-ostore-meta`),
/// like SQLite's own `-wal` and `-shm` files, so the two are moved, backed up and deleted together;
/// it is attached to every connection under the schema name ``schemaName``.
///
/// Its own schema is versioned and migrated by the same ``Migrator`` apps use, on a connection of
/// its own, before it is attached.
///
/// ```swift
/// let db = try Database(path: path)
/// let identity = try Metadatabase.attach(to: db)
/// print(identity.storeID, identity.siteID, identity.state)
/// ```
///
/// See <https://www.sqlite.org/lang_attach.html>.
package enum Metadatabase {
    /// The schema name the metadatabase is attached under on every connection.
    package static let schemaName = "ostore_meta"
    /// The suffix added to the user's database path.
    package static let fileSuffix = "-ostore-meta"

    /// Where the metadatabase of the database at `databasePath` lives.
    package static func path(forDatabaseAt databasePath: String) -> String { databasePath + fileSuffix }

    /// Migrates (creating if needed) the metadatabase of `db`'s file, attaches it, and reconciles
    /// the store identity the two files share. Call it on every connection, before any write;
    /// `Configuration.prepareDatabase` is the place.
    @discardableResult
    package static func attach(to db: Database) throws -> StoreIdentity {
        guard !db.path.isEmpty, db.path != ":memory:" else {
            throw ChangeLogError(
                .metadatabase, "an in-memory database has no file to put a metadatabase beside",
                fix: "open the store on a file")
        }
        let metaPath = path(forDatabaseAt: db.path)
        do {
            let meta = try Database(path: metaPath)
            try Migrator(plan: MetadatabasePlan.self).migrate(meta)
            try meta.close()
        } catch {
            throw ChangeLogError(
                .metadatabase, "the metadatabase \(metaPath) cannot be opened or migrated: \(error)",
                fix: "check the file's permissions and free space; if it is damaged, move it away (the store "
                    + "recreates it and treats the metadatabase as purged)")
        }
        let attached = try db.fetchAll(String.self, "SELECT name FROM pragma_database_list")
        if !attached.contains(schemaName) {
            try db.execute("ATTACH DATABASE \(metaPath) AS \(identifier: schemaName)")
            try matchMainSettings(db)
        }
        return try StoreIdentity.reconcile(db)
    }

    /// Attaches the metadatabase of `db`'s file read-only under ``schemaName`` unless it is attached
    /// already: a pool's reader reads the change log's queue this way. Outside a transaction
    /// (SQLite refuses ATTACH inside one); the file must exist (the writer made it).
    ///
    /// ```swift
    /// try Metadatabase.attachReadOnly(to: reader)
    /// ```
    package static func attachReadOnly(to db: Database) throws {
        let attached = try db.fetchAll(String.self, "SELECT name FROM pragma_database_list")
        guard !attached.contains(schemaName) else { return }
        let uri = ChangeLogReader.readOnlyURI(path(forDatabaseAt: db.path))
        try db.execute("ATTACH DATABASE \(uri) AS \(identifier: schemaName)")
    }

    /// The least page cache the metadatabase gets, in KiB: 16 MiB.
    static let minimumCacheKiB = 16_384

    /// An attached file does not inherit the connection's `synchronous` setting (it starts at
    /// SQLite's default, FULL) nor `main`'s page cache size. It gets `main`'s `synchronous`, so a
    /// tracked commit costs what an untracked one does (with WAL and NORMAL, a power loss can drop
    /// the newest commits of either file; a lost log commit whose data survived is what
    /// ``LogCoverage``'s watermark detects), and `main`'s cache but at least ``minimumCacheKiB``:
    /// a journal fold inserts into the log's unique index at places set by random keys, and once
    /// that index outgrows the cache a long transaction spills dirty pages to the WAL and writes
    /// them again.
    /// The cache is allocated as pages are used, so a connection that touches little of the log
    /// pays little. See <https://www.sqlite.org/pragma.html#pragma_synchronous> and
    /// <https://www.sqlite.org/pragma.html#pragma_cache_size>.
    static func matchMainSettings(_ db: Database) throws {
        let meta = quoteIdentifier(schemaName)
        if let synchronous = try db.fetchValue(Int.self, "PRAGMA main.synchronous") {
            try db.execute(sql: "PRAGMA \(meta).synchronous = \(synchronous)")
        }
        if let cacheSize = try db.fetchValue(Int.self, "PRAGMA main.cache_size") {
            // A positive size counts pages, a negative one KiB.
            let pageSize = try db.fetchValue(Int.self, "PRAGMA main.page_size") ?? 4096
            let mainKiB = cacheSize < 0 ? -cacheSize : cacheSize * pageSize / 1024
            try db.execute(sql: "PRAGMA \(meta).cache_size = \(-max(mainKiB, minimumCacheKiB))")
        }
    }
}

/// The metadatabase's own schema history.
enum MetadatabasePlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [
        MetadatabaseV1.self, MetadatabaseV1_1.self, MetadatabaseV1_2.self, MetadatabaseV1_3.self,
        MetadatabaseV1_4.self,
    ]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: MetadatabaseV1.self, toVersion: MetadatabaseV1_1.self),
        .lightweight(fromVersion: MetadatabaseV1_1.self, toVersion: MetadatabaseV1_2.self),
        .lightweight(fromVersion: MetadatabaseV1_2.self, toVersion: MetadatabaseV1_3.self),
        .lightweight(fromVersion: MetadatabaseV1_3.self, toVersion: MetadatabaseV1_4.self),
    ]
}

enum MetadatabaseV1: LibrarySchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [
        StoreRecord.self, TrackedTable.self, ChangeEntry.self, KnownSite.self, StashedChange.self,
    ]

    /// One row: whose store this is, which site this device is, the clock's high-water mark, and
    /// how far the local log has been pushed.
    enum StoreRecord: Model {
        static let tableDefinition = TableDefinition("ostore_store", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey().check("id = 1")
            Column("storeID", .text).notNull()
            Column("siteID", .blob).notNull().check("length(siteID) = 16")
            Column("createdAt", .real).notNull()
            Column("lastClock", .integer).notNull().defaults(0)
            Column("pushedSeq", .integer).notNull().defaults(0)
        }
    }

    /// Synced tables by number, so each log entry stores a small integer, not a name.
    enum TrackedTable: Model {
        static let tableDefinition = TableDefinition("ostore_tables", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("name", .text).notNull().unique()
        }
    }

    /// The change log (its name must be unique across the attached schemas: SQLite does not let a
    /// trigger qualify the table it inserts into): the latest change of each (table, row, column),
    /// so edits of one column before a push coalesce by construction. `columnName` is a column,
    /// `''` for "the row was inserted" or `'-'` for "the row was deleted" (``LoggedColumn``). `site` is 0 for this
    /// device. `seq` is the entry's place in the queue, unique and only ever growing: it is the
    /// rowid, which SQLite assigns as one more than the largest, and an entry written again moves
    /// to a new place at the end (`seq = excluded.seq`). Entries applied from other sites take a
    /// place too, so overwriting the newest local entry never moves the queue backwards, but only
    /// `site = 0` entries are pushed. Rows are appended in queue order, so the queue reads in
    /// rowid order and the key is stored twice (in the row and in the unique index), as in the
    /// user's own rowid tables. Values are not copied here: a push reads them from the row, so the
    /// log stays small. Since 1.3 local changes reach it through the journal (``ChangeJournal``): the
    /// triggers append there and a fold upserts here, keeping each entry's place; only the remote
    /// apply, after folding, writes here directly.
    enum ChangeEntry: Model {
        static let tableDefinition = TableDefinition("ostore_changes", sync: .localOnly, options: [.strict]) {
            Column("tableID", .integer).notNull()
            Column("pk", .any).notNull()
            Column("columnName", .text).notNull()
            Column("clock", .integer).notNull()
            Column("site", .integer).notNull().defaults(0)
            Column("seq", .integer).primaryKey()
            Index("ostore_changes_entry", on: "tableID", "pk", "columnName", unique: true)
        }
    }

    /// Other sites by number, so each log entry stores a small integer; 0 is this device.
    enum KnownSite: Model {
        static let tableDefinition = TableDefinition("ostore_sites", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("siteID", .blob).notNull().unique()
        }
    }

    /// Changes from other sites this schema cannot hold yet (a table or column a newer version
    /// added, a row whose parent has not arrived): kept, never dropped, and applied when a later
    /// migration or batch makes room for them.
    enum StashedChange: Model {
        static let tableDefinition = TableDefinition("ostore_stash", sync: .localOnly, options: [.strict]) {
            Column("id", .integer).primaryKey()
            Column("tableName", .text).notNull()
            Column("reason", .text).notNull()
            /// The whole ``IncomingChange`` as JSON, values type-faithful.
            Column("change", .text).notNull()
        }
    }
}
