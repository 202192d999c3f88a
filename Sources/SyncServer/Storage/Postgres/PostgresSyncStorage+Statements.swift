extension PostgresSyncStorage {
    /// Every statement the backend runs, prepared once per connection. Batches travel as arrays
    /// and are expanded with `unnest`, so storing a batch takes a fixed number of round trips.
    enum Statements {
        static let appliedMigrations = PostgresStatement(
            "appliedMigrations", "SELECT version, checksum FROM ostore_server_migrations ORDER BY version", [])
        static let recordMigration = PostgresStatement(
            "recordMigration", "INSERT INTO ostore_server_migrations (version, name, checksum) VALUES ($1, $2, $3)",
            [.int8, .text, .text])
        static let health = PostgresStatement("health", "SELECT count(*) FROM server_datasets", [])

        // MARK: Administration

        static let createDataset = PostgresStatement(
            "createDataset",
            """
            INSERT INTO server_datasets (name, incarnation) VALUES ($1, $2)
            ON CONFLICT (name) DO NOTHING RETURNING id
            """, [.text, .text])
        static let datasets = PostgresStatement(
            "datasets", "SELECT name, schema_version, last_serial, allowed_major FROM server_datasets ORDER BY name", []
        )
        static let setAllowedMajor = PostgresStatement(
            "setAllowedMajor", "UPDATE server_datasets SET allowed_major = $2 WHERE id = $1", [.int8, .int8])
        static let datasetID = PostgresStatement(
            "datasetID", "SELECT id FROM server_datasets WHERE name = $1", [.text])
        static let insertToken = PostgresStatement(
            "insertToken",
            """
            INSERT INTO server_tokens (id, dataset_id, digest, read_only, subject, claims, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7))
            """, [.text, .int8, .bytea, .bool, .text, .text, .float8])
        static let revokeToken = PostgresStatement(
            "revokeToken",
            "UPDATE server_tokens SET revoked_at = clock_timestamp() WHERE id = $1 AND revoked_at IS NULL",
            [.text])
        static let tokenExists = PostgresStatement(
            "tokenExists", "SELECT 1 FROM server_tokens WHERE id = $1", [.text])
        static let tokens = PostgresStatement(
            "tokens",
            """
            SELECT t.id, d.name, t.read_only, t.revoked_at IS NOT NULL, t.subject,
                extract(epoch FROM t.expires_at)::float8
            FROM server_tokens AS t JOIN server_datasets AS d ON d.id = t.dataset_id ORDER BY d.name, t.created_at
            """, [])

        /// Every dataset's new incarnation in one statement: `$1` names, `$2` incarnations.
        static let renewIncarnations = PostgresStatement(
            "renewIncarnations",
            """
            UPDATE server_datasets AS d SET incarnation = r.incarnation
            FROM unnest($1::text[], $2::text[]) AS r (name, incarnation) WHERE d.name = r.name COLLATE "C"
            """, [.textArray, .textArray])
        static let datasetNamesForUpdate = PostgresStatement(
            "datasetNamesForUpdate", "SELECT name FROM server_datasets ORDER BY id FOR NO KEY UPDATE", [])

        // MARK: Pull cursor keys

        /// The newest key and the one before it.
        static let cursorKeys = PostgresStatement(
            "cursorKeys", "SELECT id, secret FROM server_cursor_keys ORDER BY id DESC LIMIT 2", [])
        /// Taken by what adds a key, in its transaction: one at a time, so each takes the next id.
        /// Plain reads of the keys go on meanwhile.
        static let lockCursorKeys = "LOCK TABLE server_cursor_keys IN SHARE ROW EXCLUSIVE MODE"
        static let insertFirstCursorKey = PostgresStatement(
            "insertFirstCursorKey",
            "INSERT INTO server_cursor_keys (id, secret) SELECT 1, $1 WHERE NOT EXISTS (SELECT 1 FROM server_cursor_keys)",
            [.bytea])
        static let addCursorKey = PostgresStatement(
            "addCursorKey",
            "INSERT INTO server_cursor_keys (id, secret) SELECT coalesce(max(id), 0) + 1, $1 FROM server_cursor_keys RETURNING id",
            [.bytea])
        /// Every key older than `$1`, the one before the key just added.
        static let dropCursorKeys = PostgresStatement(
            "dropCursorKeys", "DELETE FROM server_cursor_keys WHERE id < $1 RETURNING id", [.int8])

        // MARK: Serving

        /// The fingerprint of dataset `d`'s newest entry, or NULL when `last_chain` is not that
        /// entry's (a server of an earlier release moved `last_serial` since, see migration 3).
        static let newestChain = "CASE WHEN d.last_chain_serial = d.last_serial THEN d.last_chain END"

        static let grant = PostgresStatement(
            "grant",
            """
            SELECT t.id, d.name, t.read_only, t.digest, t.subject, t.claims, extract(epoch FROM t.expires_at)::float8
            FROM server_tokens AS t JOIN server_datasets AS d ON d.id = t.dataset_id
            WHERE t.digest = $1 AND t.revoked_at IS NULL
            """, [.bytea])
        /// One statement, so one snapshot: the incarnation, the newest serial (never below one a
        /// page read earlier handed out, since `last_serial` only grows and every earlier read saw
        /// only committed values) and the site's high-water mark agree.
        static let datasetState = PostgresStatement(
            "datasetState",
            """
            SELECT d.incarnation, d.last_serial, coalesce(s.high_seq, 0), \(newestChain) FROM server_datasets AS d
            LEFT JOIN server_sites AS s ON s.dataset_id = d.id AND s.site = $2
            WHERE d.name = $1
            """, [.text, .bytea])
        static let schemaVersion = PostgresStatement(
            "schemaVersion", "SELECT schema_version FROM server_datasets WHERE name = $1", [.text])
        /// The lock every writer of a dataset takes first: it orders pushes, so log serials commit
        /// in order (see docs/POSTGRES.md). NO KEY UPDATE leaves foreign-key checks unblocked. The last
        /// column is the version of the dataset's scope rules, NULL when it has none.
        static let lockDataset = PostgresStatement(
            "lockDataset",
            """
            SELECT id, schema_version, last_serial, \(newestChain), allowed_major,
                (SELECT version FROM server_scope_rules WHERE dataset_id = d.id ORDER BY from_position DESC LIMIT 1)
            FROM server_datasets AS d WHERE name = $1 FOR NO KEY UPDATE
            """,
            [.text])
        /// A site's high-water mark (0 when it never pushed), the token it is bound to and whether
        /// that token is still valid (``SiteBinding``), with the dataset's id: what a claim decides on.
        static let siteClaim = PostgresStatement(
            "siteClaim",
            """
            SELECT d.id, coalesce(s.high_seq, 0), s.token_id, t.id IS NOT NULL FROM server_datasets AS d
            LEFT JOIN server_sites AS s ON s.dataset_id = d.id AND s.site = $2
            LEFT JOIN server_tokens AS t ON t.id = s.token_id AND t.revoked_at IS NULL
            WHERE d.name = $1
            """, [.text, .bytea])
        static let schemaFingerprint = PostgresStatement(
            "schemaFingerprint", "SELECT fingerprint FROM server_schemas WHERE dataset_id = $1 AND version = $2",
            [.int8, .text])
        static let insertSchema = PostgresStatement(
            "insertSchema", "INSERT INTO server_schemas (dataset_id, version, fingerprint) VALUES ($1, $2, $3)",
            [.int8, .text, .text])
        static let schemaDefinitionFingerprint = PostgresStatement(
            "schemaDefinitionFingerprint",
            "SELECT fingerprint FROM server_schema_definitions WHERE dataset_id = $1 AND version = $2", [.int8, .text])
        static let insertSchemaDefinition = PostgresStatement(
            "insertSchemaDefinition",
            """
            INSERT INTO server_schema_definitions (dataset_id, version, fingerprint, definition)
            VALUES ($1, $2, $3, $4)
            """, [.int8, .text, .text, .text])
        static let schemaDefinitions = PostgresStatement(
            "schemaDefinitions",
            """
            SELECT s.version, s.definition FROM server_schema_definitions AS s
            JOIN server_datasets AS d ON d.id = s.dataset_id WHERE d.name = $1
            """, [.text])
        static let schemaDefinitionsByID = PostgresStatement(
            "schemaDefinitionsByID", "SELECT version, definition FROM server_schema_definitions WHERE dataset_id = $1",
            [.int8])
        static let setSchemaVersion = PostgresStatement(
            "setSchemaVersion", "UPDATE server_datasets SET schema_version = $2 WHERE id = $1", [.int8, .text])

        // MARK: Push

        /// A site's high-water mark, the token it is bound to and whether that token is still
        /// valid (``SiteBinding``): a push checks the binding in the round trip that reads the mark.
        static let siteOfPush = PostgresStatement(
            "siteOfPush",
            """
            SELECT s.high_seq, s.token_id, t.id IS NOT NULL FROM server_sites AS s
            LEFT JOIN server_tokens AS t ON t.id = s.token_id AND t.revoked_at IS NULL
            WHERE s.dataset_id = $1 AND s.site = $2
            """, [.int8, .bytea])
        static let rowStates = PostgresStatement(
            "rowStates",
            """
            SELECT r.table_name, r.key, r.created_clock, r.created_site, r.deleted_clock, r.deleted_site
            FROM server_rows AS r JOIN unnest($2::text[], $3::text[]) AS k (table_name, key)
                ON r.table_name = k.table_name COLLATE "C" AND r.key = k.key COLLATE "C"
            WHERE r.dataset_id = $1
            """, [.int8, .textArray, .textArray])
        static let cellVersions = PostgresStatement(
            "cellVersions",
            """
            SELECT c.table_name, c.key, c.column_name, c.clock, c.site
            FROM server_cells AS c JOIN unnest($2::text[], $3::text[]) AS k (table_name, key)
                ON c.table_name = k.table_name COLLATE "C" AND c.key = k.key COLLATE "C"
            WHERE c.dataset_id = $1
            """, [.int8, .textArray, .textArray])
        static let insertLog = PostgresStatement(
            "insertLog",
            """
            INSERT INTO server_log (dataset_id, serial, site, body, chain)
            SELECT $1, e.serial, $2, e.body, e.chain FROM unnest($3::bigint[], $4::text[], $5::bigint[])
                AS e (serial, body, chain)
            """, [.int8, .bytea, .int8Array, .textArray, .int8Array])
        /// The fingerprint of the log up to the entry at a serial (``LogChain``), for a pull cursor
        /// behind the log's end.
        static let logChain = PostgresStatement(
            "logChain",
            """
            SELECT l.chain FROM server_datasets AS d JOIN server_log AS l ON l.dataset_id = d.id
            WHERE d.name = $1 AND l.serial = $2
            """, [.text, .int8])
        static let upsertRows = PostgresStatement(
            "upsertRows",
            """
            INSERT INTO server_rows (dataset_id, table_name, key, created_clock, created_site, deleted_clock, deleted_site)
            SELECT $1, r.* FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bytea[], $6::bigint[], $7::bytea[])
                AS r (table_name, key, created_clock, created_site, deleted_clock, deleted_site)
            ON CONFLICT (dataset_id, table_name, key) DO UPDATE SET
                created_clock = excluded.created_clock, created_site = excluded.created_site,
                deleted_clock = excluded.deleted_clock, deleted_site = excluded.deleted_site
            """, [.int8, .textArray, .textArray, .int8Array, .byteaArray, .int8Array, .byteaArray])
        static let deleteCells = PostgresStatement(
            "deleteCells",
            """
            DELETE FROM server_cells AS c USING unnest($2::text[], $3::text[]) AS k (table_name, key)
            WHERE c.dataset_id = $1 AND c.table_name = k.table_name COLLATE "C" AND c.key = k.key COLLATE "C"
            """, [.int8, .textArray, .textArray])
        static let deleteCellColumns = PostgresStatement(
            "deleteCellColumns",
            """
            DELETE FROM server_cells AS c USING unnest($2::text[], $3::text[], $4::text[]) AS k (table_name, key, column_name)
            WHERE c.dataset_id = $1 AND c.table_name = k.table_name COLLATE "C" AND c.key = k.key COLLATE "C"
                AND c.column_name = k.column_name COLLATE "C"
            """, [.int8, .textArray, .textArray, .textArray])
        static let redateCells = PostgresStatement(
            "redateCells",
            """
            UPDATE server_cells AS c SET clock = k.clock, site = k.site
            FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::bytea[]) AS k (table_name, key, column_name, clock, site)
            WHERE c.dataset_id = $1 AND c.table_name = k.table_name COLLATE "C" AND c.key = k.key COLLATE "C"
                AND c.column_name = k.column_name COLLATE "C"
            """, [.int8, .textArray, .textArray, .textArray, .int8Array, .byteaArray])
        static let upsertCells = PostgresStatement(
            "upsertCells",
            """
            INSERT INTO server_cells (dataset_id, table_name, key, column_name, value_type, integer_value, real_value,
                bytes_value, clock, site)
            SELECT $1, c.* FROM unnest($2::text[], $3::text[], $4::text[], $5::smallint[], $6::bigint[],
                $7::float8[], $8::bytea[], $9::bigint[], $10::bytea[])
                AS c (table_name, key, column_name, value_type, integer_value, real_value, bytes_value, clock, site)
            ON CONFLICT (dataset_id, table_name, key, column_name) DO UPDATE SET
                value_type = excluded.value_type, integer_value = excluded.integer_value,
                real_value = excluded.real_value, bytes_value = excluded.bytes_value, clock = excluded.clock,
                site = excluded.site
            """,
            [
                .int8, .textArray, .textArray, .textArray, .int2Array, .int8Array, .float8Array, .byteaArray,
                .int8Array, .byteaArray,
            ])
        /// Writes a site's high-water mark and, unless `$4` is NULL, the token it is bound to.
        static let upsertSite = PostgresStatement(
            "upsertSite",
            """
            INSERT INTO server_sites (dataset_id, site, high_seq, token_id) VALUES ($1, $2, $3, $4)
            ON CONFLICT (dataset_id, site) DO UPDATE SET
                high_seq = excluded.high_seq, token_id = coalesce(excluded.token_id, server_sites.token_id)
            """, [.int8, .bytea, .int8, .text])
        /// Also tells the other servers' listeners (``PostgresChangeListener``) when the push
        /// commits: `$4` is ``PostgresChangeListener/payload(instance:dataset:)``. A notification
        /// is sent on commit only, in commit order, and dropped with a rollback.
        static let setLastSerial = PostgresStatement(
            "setLastSerial",
            "UPDATE server_datasets SET last_serial = $2, last_chain = $3, last_chain_serial = $2 "
                + "FROM (SELECT pg_notify('\(PostgresChangeListener.channel)', $4)) AS notified WHERE id = $1",
            [.int8, .int8, .int8, .text])

        // MARK: Pull

        /// One statement, so one snapshot: the dataset's newest serial and the page agree.
        static let readLog = PostgresStatement(
            "readLog",
            """
            SELECT d.last_serial, l.serial, l.body, \(newestChain), l.chain, l.site FROM server_datasets AS d
            LEFT JOIN LATERAL (
                SELECT serial, body, chain, site FROM server_log
                WHERE dataset_id = d.id AND serial > $2 AND site IS DISTINCT FROM $3 ORDER BY serial LIMIT $4
            ) AS l ON true
            WHERE d.name = $1 ORDER BY l.serial
            """, [.text, .int8, .bytea, .int8])
        static let snapshotStart = PostgresStatement(
            "snapshotStart",
            """
            SELECT id, last_serial, (SELECT count(*) FROM server_rows WHERE dataset_id = d.id)
            FROM server_datasets AS d WHERE name = $1
            """, [.text])
        static let snapshotRowsFirst = PostgresStatement(
            "snapshotRowsFirst",
            """
            SELECT table_name, key, created_clock, created_site, deleted_clock, deleted_site FROM server_rows
            WHERE dataset_id = $1 ORDER BY table_name, key LIMIT $2
            """, [.int8, .int8])
        static let snapshotRowsAfter = PostgresStatement(
            "snapshotRowsAfter",
            """
            SELECT table_name, key, created_clock, created_site, deleted_clock, deleted_site FROM server_rows
            WHERE dataset_id = $1 AND (table_name, key) > ($2::text COLLATE "C", $3::text COLLATE "C")
            ORDER BY table_name, key LIMIT $4
            """, [.int8, .text, .text, .int8])
        static let snapshotCells = PostgresStatement(
            "snapshotCells",
            """
            SELECT table_name, key, column_name, value_type, integer_value, real_value, bytes_value, clock, site
            FROM server_cells
            WHERE dataset_id = $1 AND (table_name, key) >= ($2::text COLLATE "C", $3::text COLLATE "C")
                AND (table_name, key) <= ($4::text COLLATE "C", $5::text COLLATE "C")
            ORDER BY table_name, key, column_name
            """, [.int8, .text, .text, .text, .text])
    }
}
