import Foundation

/// The PostgreSQL backend's own tables, created and evolved by numbered migrations. Each applied
/// migration is recorded in `ostore_server_migrations` with the SHA-256 of its SQL; a database on
/// which a recorded migration's checksum differs from this release's (an edited shipped
/// migration), or that has migrations this release does not know (a newer release wrote it), is
/// refused. Shipped migrations are append-only: add a new one, never edit one.
///
/// Migrations run in one transaction under an advisory lock, so several servers starting at once
/// over one database apply each migration exactly once.
///
/// See <https://www.postgresql.org/docs/15/explicit-locking.html#ADVISORY-LOCKS>.
struct PostgresMigration: Sendable {
    let version: Int
    let name: String
    let sql: String

    var checksum: String { Crypto.sha256(Data(sql.utf8)).map { String(format: "%02x", $0) }.joined() }

    static let all: [PostgresMigration] = [
        PostgresMigration(version: 1, name: "server tables", sql: version1),
        PostgresMigration(version: 2, name: "dataset incarnations", sql: version2),
        PostgresMigration(version: 3, name: "log fingerprints", sql: version3),
        PostgresMigration(version: 4, name: "pull cursor keys", sql: version4),
        PostgresMigration(version: 5, name: "site bindings and major allowances", sql: version5),
        PostgresMigration(version: 6, name: "schema definitions", sql: version6),
        PostgresMigration(version: 7, name: "token subjects and expiry", sql: version7),
        PostgresMigration(version: 8, name: "scope rules and the scope index", sql: version8),
    ]

    /// Text columns compared or ordered (names, keys) use the C collation: byte order, as in
    /// SQLite, whatever the cluster's locale. `last_serial` numbers each dataset's log; a pushing
    /// transaction locks the dataset's row before taking serials, so they commit in order
    /// (docs/POSTGRES.md). A cell's value keeps its SQLite storage class in `value_type`
    /// (0 null, 1 integer, 2 real, 3 text, 4 blob); text is kept as UTF-8 bytes because
    /// PostgreSQL's text cannot hold U+0000. As in the SQLite schema, the log and state tables
    /// declare no foreign key: each would cost a lookup per stored change, and only a push, which
    /// holds the dataset's row, writes them.
    private static let version1 = """
        CREATE TABLE server_datasets (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name text COLLATE "C" NOT NULL UNIQUE,
            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            schema_version text,
            last_serial bigint NOT NULL DEFAULT 0
        );
        CREATE TABLE server_schemas (
            dataset_id bigint NOT NULL REFERENCES server_datasets (id),
            version text COLLATE "C" NOT NULL,
            fingerprint text NOT NULL,
            PRIMARY KEY (dataset_id, version)
        );
        CREATE TABLE server_tokens (
            id text PRIMARY KEY,
            dataset_id bigint NOT NULL REFERENCES server_datasets (id),
            digest bytea NOT NULL UNIQUE,
            read_only boolean NOT NULL,
            created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            revoked_at timestamptz
        );
        CREATE TABLE server_sites (
            dataset_id bigint NOT NULL,
            site bytea NOT NULL,
            high_seq bigint NOT NULL,
            PRIMARY KEY (dataset_id, site)
        );
        CREATE TABLE server_log (
            dataset_id bigint NOT NULL,
            serial bigint NOT NULL,
            site bytea NOT NULL,
            body text NOT NULL,
            PRIMARY KEY (dataset_id, serial)
        );
        CREATE TABLE server_rows (
            dataset_id bigint NOT NULL,
            table_name text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            created_clock bigint,
            created_site bytea,
            deleted_clock bigint,
            deleted_site bytea,
            PRIMARY KEY (dataset_id, table_name, key)
        );
        CREATE TABLE server_cells (
            dataset_id bigint NOT NULL,
            table_name text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            column_name text COLLATE "C" NOT NULL,
            value_type smallint NOT NULL,
            integer_value bigint,
            real_value double precision,
            bytes_value bytea,
            clock bigint NOT NULL,
            site bytea NOT NULL,
            PRIMARY KEY (dataset_id, table_name, key, column_name)
        );
        """

    /// Gives each dataset an incarnation (as the SQLite schema's version 1.1 does): a random id made
    /// with the dataset and made again by `ostore-server restore --postgres` after a `pg_restore`,
    /// which pull cursors carry, so a cursor issued before the restore is refused instead of
    /// skipping the changes the restored database numbers again. Datasets made before have none
    /// (NULL) until their first restore, so the cursors their devices hold stay valid across the
    /// upgrade.
    private static let version2 = """
        ALTER TABLE server_datasets ADD COLUMN IF NOT EXISTS incarnation text;
        """

    /// Keeps with each log entry the fingerprint of the log up to it (``LogChain``, as the SQLite
    /// schema's version 1.4 does), and with each dataset the one of its newest entry, which pull
    /// cursors carry, so a cursor read from a log that a `pg_restore` without `ostore-server restore`
    /// replaced is refused even once the restored log has grown past it. Entries stored before have
    /// none (NULL); cursors issued before carry none. `last_chain_serial` says which serial
    /// `last_chain` belongs to: servers of an earlier release still running beside this one move
    /// `last_serial` alone, and their entries have no fingerprint, so `last_chain` then counts for
    /// nothing (``Statements/newestChain``).
    private static let version3 = """
        ALTER TABLE server_log ADD COLUMN IF NOT EXISTS chain bigint;
        ALTER TABLE server_datasets ADD COLUMN IF NOT EXISTS last_chain bigint;
        ALTER TABLE server_datasets ADD COLUMN IF NOT EXISTS last_chain_serial bigint;
        """

    /// Keeps the keys that authenticate pull cursors (``CursorKey``, as the SQLite schema's version
    /// 1.5 does): every server over the database signs and checks cursors with the same keys, and a
    /// `pg_dump` carries them. `id` numbers them in the order they were made; the first is made on
    /// first need. Cursors issued before carry no MAC and are refused, so each device downloads its
    /// datasets once after the upgrade.
    private static let version4 = """
        CREATE TABLE IF NOT EXISTS server_cursor_keys (
            id bigint PRIMARY KEY,
            secret bytea NOT NULL,
            created_at timestamptz NOT NULL DEFAULT clock_timestamp()
        );
        """

    /// Binds each site to a token and lets the operator bound a dataset's schema moves (as the
    /// SQLite schema's version 1.6 does): `server_sites.token_id` is the token the site belongs to
    /// (``SiteBinding``), NULL for the sites stored before, which their first hello or push after the
    /// upgrade binds; `server_datasets.allowed_major` the highest major the dataset may move to
    /// (``MajorAllowance``), NULL when the operator gave none. A server of an earlier release still
    /// running beside this one neither checks nor makes bindings, and moves datasets unbounded, until
    /// it is replaced.
    private static let version5 = """
        ALTER TABLE server_sites ADD COLUMN IF NOT EXISTS token_id text;
        ALTER TABLE server_datasets ADD COLUMN IF NOT EXISTS allowed_major integer;
        """

    /// Keeps the definition of each schema version a hello announced with one, with its
    /// fingerprint (``RecordedSchema``; as the SQLite schema's version 1.7 does), beside the
    /// fingerprints of hellos without one in `server_schemas`: pushes under a version with a
    /// definition are checked against it (``SchemaRules``). `definition` is its canonical JSON. A
    /// server of an earlier release still running beside this one neither records nor checks
    /// definitions until it is replaced.
    private static let version6 = """
        CREATE TABLE IF NOT EXISTS server_schema_definitions (
            dataset_id bigint NOT NULL REFERENCES server_datasets (id),
            version text COLLATE "C" NOT NULL,
            fingerprint text NOT NULL,
            definition text NOT NULL,
            PRIMARY KEY (dataset_id, version)
        );
        """

    /// Lets a token name its user and expire (as the SQLite schema's version 1.8 does): `subject`
    /// is the user, `claims` a JSON object of its claims, `expires_at` when it stops being
    /// accepted; NULL for tokens made before. A server of an earlier release still running beside
    /// this one accepts such a token after it expired, until it is replaced.
    private static let version7 = """
        ALTER TABLE server_tokens ADD COLUMN IF NOT EXISTS subject text;
        ALTER TABLE server_tokens ADD COLUMN IF NOT EXISTS claims text;
        ALTER TABLE server_tokens ADD COLUMN IF NOT EXISTS expires_at timestamptz;
        """

    /// Keeps each dataset's scope rules and the scope index (as the SQLite schema's version 1.9 and
    /// state schema 1.1 do; ``PostgresScopeIndex``): `server_scope_rules` every rules file set, from
    /// the scope position it took effect at (``ScopePosition``), the newest being the rules now;
    /// `server_scope_links` and `server_scope_grants` each row's links and grants (``RowScope``)
    /// with the positions they held between, written by the push that moved them, in its
    /// transaction. A server of an earlier release still running beside this one serves the dataset
    /// unscoped and leaves the index behind until it is replaced.
    private static let version8 = """
        CREATE TABLE IF NOT EXISTS server_scope_rules (
            dataset_id bigint NOT NULL REFERENCES server_datasets (id),
            from_position bigint NOT NULL,
            version bigint NOT NULL,
            rules text NOT NULL,
            definition text NOT NULL,
            set_at timestamptz NOT NULL DEFAULT clock_timestamp(),
            PRIMARY KEY (dataset_id, from_position)
        );
        CREATE TABLE IF NOT EXISTS server_scope_links (
            dataset_id bigint NOT NULL,
            table_name text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            a text COLLATE "C" NOT NULL,
            b text COLLATE "C" NOT NULL,
            added_at bigint NOT NULL,
            removed_at bigint,
            PRIMARY KEY (dataset_id, table_name, key, kind, a, b, added_at)
        );
        CREATE INDEX IF NOT EXISTS server_scope_links_target ON server_scope_links (dataset_id, kind, a, b);
        CREATE INDEX IF NOT EXISTS server_scope_links_added ON server_scope_links (dataset_id, added_at);
        CREATE INDEX IF NOT EXISTS server_scope_links_removed ON server_scope_links (dataset_id, removed_at);
        CREATE TABLE IF NOT EXISTS server_scope_grants (
            dataset_id bigint NOT NULL,
            table_name text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            bucket_kind text COLLATE "C" NOT NULL,
            member text COLLATE "C" NOT NULL,
            value text COLLATE "C" NOT NULL,
            added_at bigint NOT NULL,
            removed_at bigint,
            PRIMARY KEY (dataset_id, table_name, key, bucket_kind, member, value, added_at)
        );
        CREATE INDEX IF NOT EXISTS server_scope_grants_member ON server_scope_grants (dataset_id, bucket_kind, member);
        """

    /// Brings the database to the newest of `migrations` (this release's; tests give an earlier
    /// release's), or refuses it.
    static func migrate(_ connection: PostgresConnection, _ migrations: [PostgresMigration] = all) throws {
        try connection.transaction {
            // The key is this backend's: "ostore" in ASCII.
            try connection.executeScript("SELECT pg_advisory_xact_lock(111115116111114101)", name: "migration lock")
            try connection.executeScript(
                """
                CREATE TABLE IF NOT EXISTS ostore_server_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
                )
                """, name: "migration ledger")
            let applied = try connection.execute(PostgresSyncStorage.Statements.appliedMigrations)
            var done: Set<Int> = []
            for row in 0..<applied.rowCount {
                let version = Int(try applied.int64(row: row, column: 0))
                let checksum = try applied.string(row: row, column: 1)
                guard let known = migrations.first(where: { $0.version == version }) else {
                    throw ServerError(
                        .storage,
                        "the PostgreSQL database has server migration \(version), which this release of "
                            + "ostore-server does not know",
                        fix: "run the release of ostore-server that migrated it (or a newer one)")
                }
                guard known.checksum == checksum else {
                    throw ServerError(
                        .storage,
                        "server migration \(version) (\(known.name)) was applied with checksum "
                            + "\(checksum.prefix(12))…, but this release ships it with \(known.checksum.prefix(12))…: "
                            + "a shipped migration was edited",
                        fix: "restore the migration's original SQL and add the change as a new migration")
                }
                done.insert(version)
            }
            for migration in migrations where !done.contains(migration.version) {
                try connection.executeScript(migration.sql, name: "migration \(migration.version)")
                try connection.execute(
                    PostgresSyncStorage.Statements.recordMigration,
                    [.int8(Int64(migration.version)), .text(migration.name), .text(migration.checksum)])
            }
        }
    }
}
