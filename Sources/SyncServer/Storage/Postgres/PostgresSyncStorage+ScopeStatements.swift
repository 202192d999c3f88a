extension PostgresSyncStorage.Statements {
    // MARK: Scope rules

    /// Dataset `$1`'s rules now: the newest set.
    static let scopeRulesNow = PostgresStatement(
        "scopeRulesNow",
        """
        SELECT version, rules, definition, extract(epoch FROM set_at)::float8 FROM server_scope_rules
        WHERE dataset_id = $1 ORDER BY from_position DESC LIMIT 1
        """, [.int8])
    static let scopeRulesVersion = PostgresStatement(
        "scopeRulesVersion",
        """
        SELECT r.version FROM server_scope_rules AS r JOIN server_datasets AS d ON d.id = r.dataset_id
        WHERE d.name = $1 ORDER BY r.from_position DESC LIMIT 1
        """, [.text])
    /// The rules dataset `$1`'s index followed at position `$2`.
    static let scopeRulesAt = PostgresStatement(
        "scopeRulesAt",
        """
        SELECT version, rules, definition FROM server_scope_rules
        WHERE dataset_id = $1 AND from_position <= $2 ORDER BY from_position DESC LIMIT 1
        """, [.int8, .int8])
    static let insertScopeRules = PostgresStatement(
        "insertScopeRules",
        """
        INSERT INTO server_scope_rules (dataset_id, from_position, version, rules, definition)
        VALUES ($1, $2, $3, $4, $5)
        """, [.int8, .int8, .int8, .text, .text])
    /// Dataset `$1`'s newest serial and the position of its newest rules.
    static let scopeEnd = PostgresStatement(
        "scopeEnd",
        """
        SELECT d.last_serial, (SELECT max(from_position) FROM server_scope_rules WHERE dataset_id = d.id)
        FROM server_datasets AS d WHERE d.id = $1
        """, [.int8])

    // MARK: The scope index as it stands

    /// The standing links of the rows named by `$2` (tables) and `$3` (keys).
    static let scopeLinksOfRows = PostgresStatement(
        "scopeLinksOfRows",
        """
        SELECT l.table_name, l.key, l.kind, l.a, l.b
        FROM server_scope_links AS l JOIN unnest($2::text[], $3::text[]) AS k (table_name, key)
            ON l.table_name = k.table_name COLLATE "C" AND l.key = k.key COLLATE "C"
        WHERE l.dataset_id = $1 AND l.removed_at IS NULL
        """, [.int8, .textArray, .textArray])
    static let scopeGrantsOfRows = PostgresStatement(
        "scopeGrantsOfRows",
        """
        SELECT g.table_name, g.key, g.bucket_kind, g.member, g.value
        FROM server_scope_grants AS g JOIN unnest($2::text[], $3::text[]) AS k (table_name, key)
            ON g.table_name = k.table_name COLLATE "C" AND g.key = k.key COLLATE "C"
        WHERE g.dataset_id = $1 AND g.removed_at IS NULL
        """, [.int8, .textArray, .textArray])
    static let allScopeLinks = PostgresStatement(
        "allScopeLinks",
        "SELECT table_name, key, kind, a, b FROM server_scope_links WHERE dataset_id = $1 AND removed_at IS NULL",
        [.int8])
    static let allScopeGrants = PostgresStatement(
        "allScopeGrants",
        """
        SELECT table_name, key, bucket_kind, member, value FROM server_scope_grants
        WHERE dataset_id = $1 AND removed_at IS NULL
        """, [.int8])

    // MARK: Writing the index

    /// Closes standing links, each at its position: `$2`…`$6` name them, `$7` the positions.
    static let closeScopeLinks = PostgresStatement(
        "closeScopeLinks",
        """
        UPDATE server_scope_links AS l SET removed_at = m.position
        FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
            AS m (table_name, key, kind, a, b, position)
        WHERE l.dataset_id = $1 AND l.table_name = m.table_name COLLATE "C" AND l.key = m.key COLLATE "C"
            AND l.kind = m.kind COLLATE "C" AND l.a = m.a COLLATE "C" AND l.b = m.b COLLATE "C"
            AND l.removed_at IS NULL
        """, [.int8, .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array])
    /// Adds links held from `$7` to `$8` (NULL: standing).
    static let insertScopeLinks = PostgresStatement(
        "insertScopeLinks",
        """
        INSERT INTO server_scope_links (dataset_id, table_name, key, kind, a, b, added_at, removed_at)
        SELECT $1, m.table_name, m.key, m.kind, m.a, m.b, m.added_at, m.removed_at
        FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
            AS m (table_name, key, kind, a, b, added_at, removed_at)
        """, [.int8, .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array, .int8Array])
    static let closeScopeGrants = PostgresStatement(
        "closeScopeGrants",
        """
        UPDATE server_scope_grants AS g SET removed_at = m.position
        FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
            AS m (table_name, key, bucket_kind, member, value, position)
        WHERE g.dataset_id = $1 AND g.table_name = m.table_name COLLATE "C" AND g.key = m.key COLLATE "C"
            AND g.bucket_kind = m.bucket_kind COLLATE "C" AND g.member = m.member COLLATE "C"
            AND g.value = m.value COLLATE "C" AND g.removed_at IS NULL
        """, [.int8, .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array])
    static let insertScopeGrants = PostgresStatement(
        "insertScopeGrants",
        """
        INSERT INTO server_scope_grants (dataset_id, table_name, key, bucket_kind, member, value, added_at, removed_at)
        SELECT $1, m.table_name, m.key, m.bucket_kind, m.member, m.value, m.added_at, m.removed_at
        FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
            AS m (table_name, key, bucket_kind, member, value, added_at, removed_at)
        """, [.int8, .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array, .int8Array])

    // MARK: Reading the index's history

    /// The buckets of kind `$2` membership rows grant to `$3` at position `$4`.
    static let scopeGrantedAt = PostgresStatement(
        "scopeGrantedAt",
        """
        SELECT value FROM server_scope_grants
        WHERE dataset_id = $1 AND bucket_kind = $2 AND member = $3
            AND added_at <= $4 AND (removed_at IS NULL OR removed_at > $4)
        """, [.int8, .text, .text, .int8])
    static let scopeGrantedNow = PostgresStatement(
        "scopeGrantedNow",
        """
        SELECT value FROM server_scope_grants
        WHERE dataset_id = $1 AND bucket_kind = $2 AND member = $3 AND removed_at IS NULL
        """, [.int8, .text, .text])
    /// Down from the rows linked to the buckets `$2` (kinds), `$3` (values) at position `$4`,
    /// through parent links.
    static let scopeRowsReached = PostgresStatement(
        "scopeRowsReached",
        """
        WITH RECURSIVE reached (table_name, key) AS (
            SELECT l.table_name, l.key FROM unnest($2::text[], $3::text[]) AS g (kind, value)
            JOIN server_scope_links AS l ON l.dataset_id = $1 AND l.kind = 'b'
                AND l.a = g.kind COLLATE "C" AND l.b = g.value COLLATE "C"
            WHERE l.added_at <= $4 AND (l.removed_at IS NULL OR l.removed_at > $4)
            UNION
            SELECT l.table_name, l.key FROM reached AS r
            JOIN server_scope_links AS l ON l.dataset_id = $1 AND l.kind = 'p' AND l.a = r.table_name AND l.b = r.key
            WHERE l.added_at <= $4 AND (l.removed_at IS NULL OR l.removed_at > $4)
        )
        SELECT table_name, key FROM reached
        """, [.int8, .textArray, .textArray, .int8])
    static let scopeRowsRelinked = PostgresStatement(
        "scopeRowsRelinked",
        """
        SELECT table_name, key FROM server_scope_links WHERE dataset_id = $1 AND added_at > $2 AND added_at <= $3
        UNION
        SELECT table_name, key FROM server_scope_links WHERE dataset_id = $1 AND removed_at > $2 AND removed_at <= $3
        """, [.int8, .int8, .int8])
    /// The rows linked to the buckets `$2`, `$3` and every row below them and the rows `$4`
    /// (tables), `$5` (keys), by the links standing at `$6` or at `$7`.
    static let scopeRowsLinkedBelow = PostgresStatement(
        "scopeRowsLinkedBelow",
        """
        WITH RECURSIVE start (table_name, key) AS (
            SELECT r.table_name COLLATE "C", r.key COLLATE "C" FROM unnest($4::text[], $5::text[]) AS r (table_name, key)
            UNION
            SELECT l.table_name, l.key FROM unnest($2::text[], $3::text[]) AS g (kind, value)
            JOIN server_scope_links AS l ON l.dataset_id = $1 AND l.kind = 'b'
                AND l.a = g.kind COLLATE "C" AND l.b = g.value COLLATE "C"
            WHERE (l.added_at <= $6 AND (l.removed_at IS NULL OR l.removed_at > $6))
                OR (l.added_at <= $7 AND (l.removed_at IS NULL OR l.removed_at > $7))
        ),
        reached (table_name, key) AS (
            SELECT table_name, key FROM start
            UNION
            SELECT l.table_name, l.key FROM reached AS r
            JOIN server_scope_links AS l ON l.dataset_id = $1 AND l.kind = 'p' AND l.a = r.table_name AND l.b = r.key
            WHERE (l.added_at <= $6 AND (l.removed_at IS NULL OR l.removed_at > $6))
                OR (l.added_at <= $7 AND (l.removed_at IS NULL OR l.removed_at > $7))
        )
        SELECT table_name, key FROM reached
        """, [.int8, .textArray, .textArray, .textArray, .textArray, .int8, .int8])
    static let scopeLinksOfRowAt = PostgresStatement(
        "scopeLinksOfRowAt",
        """
        SELECT kind, a, b FROM server_scope_links
        WHERE dataset_id = $1 AND table_name = $2 AND key = $3
            AND added_at <= $4 AND (removed_at IS NULL OR removed_at > $4)
        """, [.int8, .text, .text, .int8])

    // MARK: Rows and the log, for scoped reads

    /// The cells, with their values, of the rows named by `$2` (tables) and `$3` (keys).
    static let cellsOfRows = PostgresStatement(
        "cellsOfRows",
        """
        SELECT c.table_name, c.key, c.column_name, c.value_type, c.integer_value, c.real_value, c.bytes_value,
            c.clock, c.site
        FROM server_cells AS c JOIN unnest($2::text[], $3::text[]) AS k (table_name, key)
            ON c.table_name = k.table_name COLLATE "C" AND c.key = k.key COLLATE "C"
        WHERE c.dataset_id = $1
        """, [.int8, .textArray, .textArray])
    static let allRows = PostgresStatement(
        "allRows",
        """
        SELECT table_name, key, created_clock, created_site, deleted_clock, deleted_site FROM server_rows
        WHERE dataset_id = $1
        """, [.int8])
    static let allCells = PostgresStatement(
        "allCells",
        """
        SELECT table_name, key, column_name, value_type, integer_value, real_value, bytes_value, clock, site
        FROM server_cells WHERE dataset_id = $1
        """, [.int8])
    /// Up to `$5` log entries after serial `$2` through `$3`, leaving out site `$4`'s.
    static let logRange = PostgresStatement(
        "logRange",
        """
        SELECT serial, body FROM server_log
        WHERE dataset_id = $1 AND serial > $2 AND serial <= $3 AND site IS DISTINCT FROM $4
        ORDER BY serial LIMIT $5
        """, [.int8, .int8, .int8, .bytea, .int8])
}
