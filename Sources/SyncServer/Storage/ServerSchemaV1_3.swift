import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol
import SyncStoreBridge

/// Version 1.3 packs each row's cells into its `server_rows` record (`cells`, see
/// ``MergedRow``): with random-UUID keys a cell table of its own cost a fold a second random B-tree
/// write per change. `server_cells` stays, empty, as the schema's rules are additive; nothing reads
/// or writes it any more. The stage's step packs the cells an earlier release wrote.
enum ServerSchemaV1_3: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.3.0"
    static let models: [any Model.Type] = [
        ServerSchemaV1_2.Dataset.self, ServerSchemaV1.DatasetSchema.self, ServerSchemaV1.Token.self,
        ServerSchemaV1.Site.self, ServerSchemaV1.LogEntry.self, RowState.self, ServerSchemaV1.CellState.self,
    ]

    /// The merged state of each row: its newest creation and deletion versions, and its cells packed
    /// (``MergedRow``'s layout; NULL for none). `key` is the canonical JSON of the row's key.
    enum RowState: Model {
        static let tableDefinition = TableDefinition(
            "server_rows", sync: .localOnly, options: [.strict, .withoutRowID]
        ) {
            Column("datasetID", .integer).notNull()
            Column("tableName", .text).notNull()
            Column("key", .text).notNull()
            Column("createdClock", .integer)
            Column("createdSite", .blob)
            Column("deletedClock", .integer)
            Column("deletedSite", .blob)
            Column("cells", .blob)
            PrimaryKey("datasetID", "tableName", "key")
        }
    }

    /// Runs once, in the stage's transaction: every row's cells of `server_cells`, read in key
    /// order, become its packed `cells`; then `server_cells` is emptied.
    static let packCells: MigrationStage.Body = { context in
        let db = context.database
        // Statements for every row, bounded by the primary key: run directly rather than linted a
        // million times over. The scan reads `server_cells`, which nothing changes until it ends.
        let creation = """
            SELECT createdClock, createdSite FROM server_rows WHERE datasetID = ? AND tableName = ? AND key = ?
            """
        let update = try db.cachedStatement(
            "UPDATE server_rows SET cells = ? WHERE datasetID = ? AND tableName = ? AND key = ?")
        let cursor = try db.fetchCursor(
            """
            SELECT datasetID, tableName, key, columnName, value, clock, site FROM server_cells
            ORDER BY datasetID, tableName, key, columnName
            """)
        var current: (datasetID: Int64, table: String, key: String)?
        var row = MergedRow()
        // Every cell's row exists in what 1.1 and 1.2 wrote (an update of an unknown row adds one
        // with no creation); should a directory lack one, its cells get that row rather than vanish.
        let insertRowOfCells = try db.cachedStatement(
            "INSERT INTO server_rows (cells, datasetID, tableName, key) VALUES (?, ?, ?, ?)")
        func flush() throws {
            guard let current else { return }
            try update.execute(row.packedCells, current.datasetID, current.table, current.key)
            if db.changesCount == 0 {
                try insertRowOfCells.execute(row.packedCells, current.datasetID, current.table, current.key)
            }
        }
        while let cell = try cursor.next() {
            let rowKey = (
                datasetID: try cell.decode(Int64.self, at: 0), table: try cell.decode(String.self, at: 1),
                key: try cell.decode(String.self, at: 2)
            )
            if current.map({ $0 != rowKey }) ?? true {
                try flush()
                current = rowKey
                let stored = try db.fetchOne(
                    SQL(sql: creation, arguments: [.integer(rowKey.datasetID), .text(rowKey.table), .text(rowKey.key)]))
                let created = try stored.flatMap { stored in
                    try stored.decode(Int64?.self, at: 0).flatMap { clock in
                        try stored.decode(Data?.self, at: 1).map { ChangeVersion(clock: clock, site: $0) }
                    }
                }
                row = MergedRow(created: created)
            }
            row.cells[try cell.decode(String.self, at: 3)] = MergedRow.Cell(
                value: WireValue(try cell.decode(DatabaseValue.self, at: 4)),
                version: ChangeVersion(clock: try cell.decode(at: 5), site: try cell.decode(at: 6)))
        }
        try flush()
        try context.execute("DELETE FROM server_cells")
    }
}
