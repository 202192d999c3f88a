import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension SQLiteSyncStorage {
    public func storeBatch(_ changes: [Change], site: SiteID, clientSchema: SchemaVersion, dataset: String) throws
        -> Int64
    {
        // Encoded before the write lock is taken: the log keeps each change's canonical JSON.
        let bodies = try changes.map { change in try change.canonicalJSON() }
        let keys = try changes.map { change in try change.canonicalKeyJSON() }
        return try storageWork("storing a batch in dataset \(dataset)") {
            try commits.write { db in
                guard
                    let dataset = try db.fetchOne(
                        "SELECT id, schemaVersion, lastSerial FROM server_datasets WHERE name = \(dataset)")
                else { throw ServerError(.notFound, "there is no dataset \(dataset)") }
                let datasetID: Int64 = try dataset.decode(at: 0)
                let datasetSchema = (try dataset.decode(String?.self, at: 1)).flatMap(SchemaVersion.init)
                try ErrorBody.requireMaySync(client: clientSchema, dataset: datasetSchema, pushing: true)
                var serial: Int64 = try dataset.decode(at: 2)
                let siteBytes = site.bytes
                let stored =
                    try db.fetchValue(
                        Int64.self,
                        "SELECT highSeq FROM server_sites WHERE datasetID = \(datasetID) AND site = \(siteBytes)") ?? 0
                var high = stored
                let statements = try PushStatements(db)
                for (index, change) in changes.enumerated() where change.seq > high {
                    serial += 1
                    try statements.insertLog.execute(datasetID, serial, siteBytes, bodies[index])
                    try self.merge(change, key: keys[index], datasetID: datasetID, statements, db)
                    high = change.seq
                }
                if high != stored {
                    try db.execute(
                        """
                        INSERT INTO server_sites (datasetID, site, highSeq) VALUES (\(datasetID), \(siteBytes), \(high))
                        ON CONFLICT (datasetID, site) DO UPDATE SET highSeq = excluded.highSeq
                        """)
                    try db.execute("UPDATE server_datasets SET lastSerial = \(serial) WHERE id = \(datasetID)")
                }
                return high
            }
        }
    }

    /// Folds one change into the current state by the protocol's merge rule, so a snapshot
    /// gives a new client what applying the whole log would.
    private func merge(
        _ change: Change, key: String, datasetID: Int64, _ statements: PushStatements, _ db: Database
    ) throws {
        let incoming = ChangeVersion(clock: change.clock.packed, site: change.site.bytes)
        let row = try db.fetchOne(
            SQL(sql: PushStatements.selectRow, arguments: [.integer(datasetID), .text(change.table), .text(key)]))
        let created = try row.flatMap { row in try version(row, clockAt: 0) }
        let deleted = try row.flatMap { row in try version(row, clockAt: 2) }
        let isDeleted = deleted.map { deleted in created.map { deleted > $0 } ?? true } ?? false
        let isLive = created != nil && !isDeleted

        func setRow(createdBy: ChangeVersion?, deletedBy: ChangeVersion?) throws {
            try statements.upsertRow.execute(
                datasetID, change.table, key, createdBy?.clock, createdBy?.site, deletedBy?.clock, deletedBy?.site)
        }
        func mergeColumns(creation: ChangeVersion?) throws {
            for (name, value) in change.columns where change.key[name] == nil {
                // Cells are written only after their row (setRow comes first), so a row that did
                // not exist before this change has none to look up.
                let cell =
                    row == nil
                    ? nil
                    : try db.fetchOne(
                        SQL(
                            sql: PushStatements.selectCell,
                            arguments: [.integer(datasetID), .text(change.table), .text(key), .text(name)]))
                if let cell, let local = try version(cell, clockAt: 0) {
                    guard incoming > local else { continue }
                } else if incoming < (creation ?? ChangeVersion(clock: 0, site: Data())) {
                    continue
                }
                try statements.upsertCell.execute(
                    datasetID, change.table, key, name, value.databaseValue, incoming.clock, incoming.site)
            }
        }

        switch change.op {
        case .delete:
            // Delete wins over updates of the row; only a newer insert brings it back.
            let oldest = ChangeVersion(clock: -1, site: Data())
            guard incoming > (created ?? oldest), incoming > (deleted ?? oldest) else { return }
            try setRow(createdBy: created, deletedBy: incoming)
            try statements.deleteCells.execute(datasetID, change.table, key)
        case .insert:
            if let deleted, deleted > incoming { return }
            if !isLive {
                // A new row, or one brought back (a delete dropped its cells): every column is
                // written unless an update that arrived before the insert left a newer value, as
                // a client applies such an update from its stash after the insert.
                try setRow(createdBy: incoming, deletedBy: deleted)
                try mergeColumns(creation: nil)
                return
            }
            try mergeColumns(creation: created)
            if incoming > created! { try setRow(createdBy: incoming, deletedBy: deleted) }
        case .update:
            if isDeleted { return }
            if row == nil { try setRow(createdBy: nil, deletedBy: nil) }
            try mergeColumns(creation: created)
        }
    }

    private func version(_ row: Row, clockAt index: Int) throws -> ChangeVersion? {
        guard let clock = try row.decode(Int64?.self, at: index), let site = try row.decode(Data?.self, at: index + 1)
        else { return nil }
        return ChangeVersion(clock: clock, site: site)
    }
}

/// The statements a push runs for every change, looked up in the connection's cache once per
/// batch and bound value by value: building each statement's SQL text by interpolation, finding
/// it in the cache by that text and boxing its arguments cost about as much as SQLite's work.
private struct PushStatements {
    static let selectRow = """
        SELECT createdClock, createdSite, deletedClock, deletedSite FROM server_rows
        WHERE datasetID = ? AND tableName = ? AND key = ?
        """
    static let selectCell = """
        SELECT clock, site FROM server_cells WHERE datasetID = ? AND tableName = ? AND key = ? AND columnName = ?
        """

    let insertLog: Statement
    let upsertRow: Statement
    let upsertCell: Statement
    let deleteCells: Statement

    init(_ db: Database) throws {
        insertLog = try db.cachedStatement(
            "INSERT INTO server_log (datasetID, serial, site, body) VALUES (?, ?, ?, ?)")
        upsertRow = try db.cachedStatement(
            """
            INSERT INTO server_rows (datasetID, tableName, key, createdClock, createdSite, deletedClock, deletedSite)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key) DO UPDATE SET
                createdClock = excluded.createdClock, createdSite = excluded.createdSite,
                deletedClock = excluded.deletedClock, deletedSite = excluded.deletedSite
            """)
        upsertCell = try db.cachedStatement(
            """
            INSERT INTO server_cells (datasetID, tableName, key, columnName, value, clock, site)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (datasetID, tableName, key, columnName) DO UPDATE SET
                value = excluded.value, clock = excluded.clock, site = excluded.site
            """)
        deleteCells = try db.cachedStatement(
            "DELETE FROM server_cells WHERE datasetID = ? AND tableName = ? AND key = ?")
    }
}
