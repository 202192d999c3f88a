import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// The scope index of `state.sqlite` (``ServerStateSchemaV1_1``), kept by the fold in the same
/// transaction as the rows it describes: each row's links and grants (``RowScope``) with the
/// scope positions they held between. Positions are ``ScopePosition``s.
///
/// ```swift
/// try StateScopeIndex.fold(changes, serials: serials, datasetID: id, rules: rules, stored: row, writes: &writes, db)
/// ```
enum StateScopeIndex {
    /// What the index holds of a row now.
    static func stored(datasetID: Int64, table: String, key: String, _ db: Database) throws -> RowScope {
        var scope = RowScope()
        for row in try db.fetchAll(
            """
            SELECT kind, a, b FROM state_scope_links
            WHERE datasetID = \(datasetID) AND tableName = \(table) AND key = \(key) AND removedAt IS NULL
            """)
        {
            scope.links.insert(
                RowScope.Link(kind: try row.decode(at: 0), a: try row.decode(at: 1), b: try row.decode(at: 2)))
        }
        for row in try db.fetchAll(
            """
            SELECT bucketKind, member, value FROM state_scope_grants
            WHERE datasetID = \(datasetID) AND tableName = \(table) AND key = \(key) AND removedAt IS NULL
            """)
        {
            scope.grants.insert(
                MembershipGrant(
                    kind: try row.decode(at: 0), member: try row.decode(at: 1), value: try row.decode(at: 2)))
        }
        return scope
    }

    /// Moves the index's record of a row from `old` to `new` at `position`: what went is closed
    /// there, what came opens there.
    static func write(
        datasetID: Int64, table: String, key: String, from old: RowScope, to new: RowScope, at position: Int64,
        _ db: Database
    ) throws {
        for link in old.links.subtracting(new.links) {
            try db.execute(
                """
                UPDATE state_scope_links SET removedAt = \(position)
                WHERE datasetID = \(datasetID) AND tableName = \(table) AND key = \(key) AND kind = \(link.kind)
                    AND a = \(link.a) AND b = \(link.b) AND removedAt IS NULL
                """)
        }
        for link in new.links.subtracting(old.links) {
            try db.execute(
                """
                INSERT INTO state_scope_links (datasetID, tableName, key, kind, a, b, addedAt)
                VALUES (\(datasetID), \(table), \(key), \(link.kind), \(link.a), \(link.b), \(position))
                """)
        }
        for grant in old.grants.subtracting(new.grants) {
            try db.execute(
                """
                UPDATE state_scope_grants SET removedAt = \(position)
                WHERE datasetID = \(datasetID) AND tableName = \(table) AND key = \(key)
                    AND bucketKind = \(grant.kind) AND member = \(grant.member) AND value = \(grant.value)
                    AND removedAt IS NULL
                """)
        }
        for grant in new.grants.subtracting(old.grants) {
            try db.execute(
                """
                INSERT INTO state_scope_grants (datasetID, tableName, key, bucketKind, member, value, addedAt)
                VALUES (\(datasetID), \(table), \(key), \(grant.kind), \(grant.member), \(grant.value), \(position))
                """)
        }
    }

    /// Follows one row's changes of a fold (in log order, with their serials) through its scope,
    /// from the row as the state held it before the fold (`stored`, nil when the state had none):
    /// every change that moves the row's scope is written at its own position, so the index's
    /// history is the log's and not the fold's (a state folded again in other rounds has the same
    /// one). The index holds nothing of a row the state does not hold: both are written by the
    /// same folds and forgotten together (``forget(datasetID:_:)``), so a new row's is not read.
    static func fold(
        _ changes: [FoldChange], serials: [Int64], datasetID: Int64, rules: ScopeEvaluator, stored row: MergedRow?,
        writes: inout StateScopeIndexWrites, _ db: Database
    ) throws {
        guard let first = changes.first else { return }
        let moves = try RowScope.moves(
            table: first.table, keyText: first.key, row: row ?? MergedRow(),
            scope: row == nil ? RowScope() : try stored(datasetID: datasetID, table: first.table, key: first.key, db),
            changes: zip(changes, serials).lazy.map { (change: $0.0, serial: $0.1) }, rules: rules)
        try writes.write(datasetID: datasetID, table: first.table, key: first.key, moves: moves)
    }

    /// Makes every row's record of dataset `datasetID` the one `rules` give, at `position`, and
    /// records that the index follows `rules` from there.
    static func relink(datasetID: Int64, rules: StoredScopeRules, at position: Int64, _ db: Database) throws {
        let cursor = try db.fetchCursor(
            """
            SELECT tableName, key, createdClock, createdSite, deletedClock, deletedSite, cells FROM state_rows
            WHERE datasetID = \(datasetID)
            """)
        var rows: [(table: String, key: String, row: MergedRow)] = []
        while let stored = try cursor.next() {
            rows.append(
                (
                    try stored.decode(at: 0), try stored.decode(at: 1),
                    try MergedRow(
                        created: try SQLiteSyncStorage.version(stored, clockAt: 2),
                        deleted: try SQLiteSyncStorage.version(stored, clockAt: 4),
                        packedCells: try stored.decode(Data?.self, at: 6))
                ))
        }
        for (table, key, row) in rows {
            let old = try stored(datasetID: datasetID, table: table, key: key, db)
            let new = try RowScope(relinking: row, table: table, keyText: key, under: rules.evaluator)
            try write(datasetID: datasetID, table: table, key: key, from: old, to: new, at: position, db)
        }
        try db.execute(
            """
            INSERT INTO state_scope_rules (datasetID, fromPosition, version, rules, definition)
            VALUES (\(datasetID), \(position), \(rules.version), \(rules.rulesText), \(rules.definitionText))
            """)
    }

    /// The version of the rules the index of `datasetID` follows now; nil when it follows none.
    static func appliedVersion(datasetID: Int64, _ db: Database) throws -> Int64? {
        try db.fetchValue(
            Int64.self,
            "SELECT version FROM state_scope_rules WHERE datasetID = \(datasetID) ORDER BY fromPosition DESC LIMIT 1")
    }

    /// Forgets the index of `datasetID`, whose rows are folded again from the start.
    static func forget(datasetID: Int64, _ db: Database) throws {
        for table in ["state_scope_links", "state_scope_grants", "state_scope_rules"] {
            try db.execute(SQL(sql: "DELETE FROM \(table) WHERE datasetID = ?", arguments: [.integer(datasetID)]))
        }
    }
}
