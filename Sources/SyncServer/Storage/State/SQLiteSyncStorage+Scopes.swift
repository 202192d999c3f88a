import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// What a scoped read gives a subject: the rows that came into its scope, whole, and the changes
/// of the rows that stayed in it, as changes; the rows that left it; and the position it was read
/// to, which the next read starts from.
struct ScopedChanges: Sendable {
    var changes: [Change]
    var removed: [ScopedRow]
    var position: Int64
}

extension SQLiteSyncStorage {
    /// Makes `rulesText` (a rules file, ``ScopeRules``) the scope rules of `dataset`, checked
    /// against `definition`; the fold brings the scope index to them before any change after.
    func setScopeRules(_ rulesText: String, definition: SchemaDefinition, dataset: String) throws {
        let rules = try ScopeRules.read(from: Data(rulesText.utf8))
        _ = try ScopeEvaluator(rules, definition: definition)
        let definitionText = String(decoding: try JSONEncoder().encode(definition), as: UTF8.self)
        try storageWork("setting the scope rules of dataset \(dataset)") {
            try pool.write { db in
                let datasetID = try self.datasetID(dataset, db)
                let version =
                    (try db.fetchValue(
                        Int64.self, "SELECT version FROM server_scope_rules WHERE datasetID = \(datasetID)") ?? 0) + 1
                try db.execute(
                    """
                    INSERT INTO server_scope_rules (datasetID, version, rules, definition, setAt)
                    VALUES (\(datasetID), \(version), \(rulesText), \(definitionText), \(Date()))
                    ON CONFLICT (datasetID) DO UPDATE SET
                        version = excluded.version, rules = excluded.rules, definition = excluded.definition,
                        setAt = excluded.setAt
                    """)
            }
        }
        folder.foldSoon()
    }

    /// The changes of `dataset` that move `identity`'s read scope on from `position` (nil for a
    /// first download) to the newest position folded, leaving out `site`'s own changes.
    func readScopedChanges(dataset: String, identity: ScopeIdentity, after position: Int64?, excluding site: SiteID?)
        throws -> ScopedChanges
    {
        try storageWork("reading the scope of \(identity.subject ?? "no subject") in dataset \(dataset)") {
            let (datasetID, last, rulesVersion) = try pool.read { db in
                let datasetID = try self.datasetID(dataset, db)
                return (
                    datasetID,
                    try db.fetchValue(Int64.self, "SELECT lastSerial FROM server_datasets WHERE id = \(datasetID)")
                        ?? 0,
                    try db.fetchValue(
                        Int64.self, "SELECT version FROM server_scope_rules WHERE datasetID = \(datasetID)")
                )
            }
            folder.waitUntilFolded(datasetID: datasetID, through: last, timeout: .seconds(10))
            // Rules set since the last fold: the round that relinks the index to them.
            if try state.pool.read({ db in try StateScopeIndex.appliedVersion(datasetID: datasetID, db) })
                != rulesVersion
            {
                folder.waitUntilFolded()
            }
            return try state.pool.read { db in
                let index = StateScopeIndexReader(db, datasetID: datasetID)
                let end = try index.end()
                var transition = try ScopeTransition(index, identity: identity, from: position, to: end)
                var changes: [Change] = []
                for row in transition.entering {
                    guard
                        let stored = try db.fetchOne(
                            """
                            SELECT createdClock, createdSite, deletedClock, deletedSite, cells FROM state_rows
                            WHERE datasetID = \(datasetID) AND tableName = \(row.table) AND key = \(row.key)
                            """)
                    else { continue }
                    let merged = try MergedRow(
                        created: try Self.version(stored, clockAt: 0), deleted: try Self.version(stored, clockAt: 2),
                        packedCells: try stored.decode(Data?.self, at: 4))
                    changes += try SnapshotChanges.of(
                        table: row.table, keyText: row.key, row: merged.versions,
                        cells: merged.cells.lazy.map { (name: $0.name, value: $0.cell.value, version: $0.cell.version) }
                    )
                }
                if let position {
                    for change in try loggedChanges(
                        datasetID: datasetID, after: ScopePosition.serial(of: position),
                        through: ScopePosition.serial(of: end), excluding: site)
                    where try transition.receivesChanges(
                        of: ScopedRow(table: change.table, key: try change.canonicalKeyJSON()))
                    {
                        changes.append(change)
                    }
                }
                return ScopedChanges(changes: changes, removed: transition.leaving, position: end)
            }
        }
    }

    /// The log's changes of `datasetID` after serial `from` through `to`, leaving out `site`'s own.
    private func loggedChanges(datasetID: Int64, after from: Int64, through to: Int64, excluding site: SiteID?)
        throws -> [Change]
    {
        guard from < to else { return [] }
        return try pool.read { db in
            let cursor = try db.fetchCursor(
                """
                SELECT body FROM server_log
                WHERE datasetID = \(datasetID) AND serial > \(from) AND serial <= \(to) AND site IS NOT \(site?.bytes)
                ORDER BY serial
                """)
            var bodies = LogPage.Entries()
            while let row = try cursor.next() { try row.withUnsafeBytes(at: 0) { bodies.append($0) } }
            return try Self.decodeLogBodies(bodies)
        }
    }
}
