import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// ``ScopeIndexReading`` over `state.sqlite`'s scope index, in the read transaction of `db`.
///
/// ```swift
/// let transition = try ScopeTransition(StateScopeIndexReader(db, datasetID: id), identity: bob, from: nil, to: end)
/// ```
///
/// SQLite's planner, without statistics of these tables, takes the range on `addedAt` (or
/// `removedAt`) for the most selective condition and scans every link of the dataset for each row a
/// walk reaches: the walks name the index on a link's target, and a row's links are read by their
/// row's key (`+addedAt` keeps the planner off the other indexes).
final class StateScopeIndexReader: ScopeIndexReading {
    private let db: Database
    private let datasetID: Int64
    private var rulesByVersion: [Int64: StoredScopeRules] = [:]

    init(_ db: Database, datasetID: Int64) {
        self.db = db
        self.datasetID = datasetID
    }

    /// The position the index stands at: after the last change folded, or after the rules set
    /// since.
    func end() throws -> Int64 {
        let folded =
            try db.fetchValue(Int64.self, "SELECT foldedSerial FROM state_datasets WHERE datasetID = \(datasetID)") ?? 0
        let rules = try db.fetchValue(
            Int64.self, "SELECT max(fromPosition) FROM state_scope_rules WHERE datasetID = \(datasetID)")
        return max(ScopePosition.afterChange(folded), rules ?? 0)
    }

    func rules(at position: Int64) throws -> StoredScopeRules? {
        guard
            let row = try db.fetchOne(
                """
                SELECT version, rules, definition FROM state_scope_rules
                WHERE datasetID = \(datasetID) AND fromPosition <= \(position) ORDER BY fromPosition DESC LIMIT 1
                """)
        else { return nil }
        let version: Int64 = try row.decode(at: 0)
        if let known = rulesByVersion[version] { return known }
        let rules = try StoredScopeRules.compiled(
            version: version, rulesText: try row.decode(at: 1), definitionText: try row.decode(at: 2))
        rulesByVersion[version] = rules
        return rules
    }

    func grantedValues(kind: String, member: String, at position: Int64) throws -> Set<String> {
        Set(
            try db.fetchAll(
                """
                SELECT value FROM state_scope_grants INDEXED BY state_scope_grants_member
                WHERE datasetID = \(datasetID) AND bucketKind = \(kind) AND member = \(member)
                    AND addedAt <= \(position) AND (removedAt IS NULL OR removedAt > \(position))
                """
            ).map { try $0.decode(String.self, at: 0) })
    }

    func rows(reachedFrom buckets: Set<ScopeBucket>, at position: Int64) throws -> Set<ScopedRow> {
        try scopedRows(Self.reachedSQL(datasetID: datasetID, buckets: buckets, at: position))
    }

    /// The walk of ``rows(reachedFrom:at:)``: down from the rows linked to `buckets`, through
    /// parent links.
    static func reachedSQL(datasetID: Int64, buckets: Set<ScopeBucket>, at position: Int64) -> SQL {
        """
        WITH RECURSIVE reached(tableName, key) AS (
            SELECT l.tableName, l.key FROM json_each(\(Self.pairs(buckets.map { ($0.kind, $0.value) }))) AS g
            JOIN state_scope_links AS l INDEXED BY state_scope_links_target
                ON l.datasetID = \(datasetID) AND l.kind = 'b'
                AND l.a = json_extract(g.value, '$[0]') AND l.b = json_extract(g.value, '$[1]')
            WHERE l.addedAt <= \(position) AND (l.removedAt IS NULL OR l.removedAt > \(position))
            UNION
            SELECT l.tableName, l.key FROM reached AS r
            JOIN state_scope_links AS l INDEXED BY state_scope_links_target
                ON l.datasetID = \(datasetID) AND l.kind = 'p' AND l.a = r.tableName AND l.b = r.key
            WHERE l.addedAt <= \(position) AND (l.removedAt IS NULL OR l.removedAt > \(position))
        )
        SELECT tableName, key FROM reached
        """
    }

    func rowsRelinked(after from: Int64, through to: Int64) throws -> Set<ScopedRow> {
        try scopedRows(
            """
            SELECT tableName, key FROM state_scope_links
            WHERE datasetID = \(datasetID) AND addedAt > \(from) AND addedAt <= \(to)
            UNION
            SELECT tableName, key FROM state_scope_links
            WHERE datasetID = \(datasetID) AND removedAt > \(from) AND removedAt <= \(to)
            """)
    }

    func rows(linkedTo buckets: Set<ScopeBucket>, below rows: Set<ScopedRow>, at from: Int64, or to: Int64) throws
        -> Set<ScopedRow>
    {
        try scopedRows(
            """
            WITH RECURSIVE start(tableName, key) AS (
                SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')
                FROM json_each(\(Self.pairs(rows.map { ($0.table, $0.key) })))
                UNION
                SELECT l.tableName, l.key FROM json_each(\(Self.pairs(buckets.map { ($0.kind, $0.value) }))) AS g
                JOIN state_scope_links AS l INDEXED BY state_scope_links_target
                    ON l.datasetID = \(datasetID) AND l.kind = 'b'
                    AND l.a = json_extract(g.value, '$[0]') AND l.b = json_extract(g.value, '$[1]')
                WHERE (l.addedAt <= \(from) AND (l.removedAt IS NULL OR l.removedAt > \(from)))
                    OR (l.addedAt <= \(to) AND (l.removedAt IS NULL OR l.removedAt > \(to)))
            ),
            reached(tableName, key) AS (
                SELECT tableName, key FROM start
                UNION
                SELECT l.tableName, l.key FROM reached AS r
                JOIN state_scope_links AS l INDEXED BY state_scope_links_target
                    ON l.datasetID = \(datasetID) AND l.kind = 'p' AND l.a = r.tableName AND l.b = r.key
                WHERE (l.addedAt <= \(from) AND (l.removedAt IS NULL OR l.removedAt > \(from)))
                    OR (l.addedAt <= \(to) AND (l.removedAt IS NULL OR l.removedAt > \(to)))
            )
            SELECT tableName, key FROM reached
            """)
    }

    func links(of row: ScopedRow, at position: Int64) throws -> Set<RowScope.Link> {
        Set(
            try db.fetchAll(
                """
                SELECT kind, a, b FROM state_scope_links
                WHERE datasetID = \(datasetID) AND tableName = \(row.table) AND key = \(row.key)
                    AND +addedAt <= \(position) AND (+removedAt IS NULL OR +removedAt > \(position))
                """
            ).map { RowScope.Link(kind: try $0.decode(at: 0), a: try $0.decode(at: 1), b: try $0.decode(at: 2)) })
    }

    private func scopedRows(_ sql: SQL) throws -> Set<ScopedRow> {
        Set(try db.fetchAll(sql).map { ScopedRow(table: try $0.decode(at: 0), key: try $0.decode(at: 1)) })
    }

    /// Pairs of text as one JSON array of two-element arrays, bound as one value and read back
    /// with `json_each`.
    private static func pairs(_ pairs: some Sequence<(String, String)>) -> String {
        let array = pairs.map { [$0.0, $0.1] }
        let data = (try? JSONSerialization.data(withJSONObject: array)) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// ``ScopeStateReading`` over `state.sqlite`'s rows and grants as they stand, in the read
/// transaction of `db`.
struct StateScopeStateReader: ScopeStateReading {
    let db: Database
    let datasetID: Int64
    /// Held for the batch: a check reads a row or two for each change.
    private let selectRow: Statement

    init(db: Database, datasetID: Int64) throws {
        self.db = db
        self.datasetID = datasetID
        selectRow = try db.cachedStatement(FoldStatements.selectRow)
    }

    func current(_ row: ScopedRow) throws -> (values: [String: WireValue], isLive: Bool)? {
        guard
            let merged = try SQLiteSyncStorage.storedRow(
                datasetID: datasetID, table: row.table, key: row.key, selectRow)
        else { return nil }
        var values = try ProtocolJSON.decodeValues(Data(row.key.utf8))
        for (name, cell) in merged.cells { values[name] = cell.value }
        return (values, merged.created != nil && !merged.isDeleted)
    }

    func grantedValues(kind: String, member: String) throws -> Set<String> {
        Set(
            try db.fetchAll(
                """
                SELECT value FROM state_scope_grants INDEXED BY state_scope_grants_member
                WHERE datasetID = \(datasetID) AND bucketKind = \(kind) AND member = \(member) AND removedAt IS NULL
                """
            ).map { try $0.decode(String.self, at: 0) })
    }
}
