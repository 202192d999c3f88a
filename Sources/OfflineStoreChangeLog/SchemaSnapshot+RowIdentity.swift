import OfflineStoreMigrations

extension SchemaSnapshot {
    /// Checks that every synced table can identify its rows across devices: a primary key made of
    /// TEXT or BLOB columns (UUIDs as text or 16-byte blobs), never a rowid, an INTEGER key or
    /// AUTOINCREMENT, whose values two devices would both hand out. FTS5 tables are derived data and
    /// must be local-only.
    ///
    /// ```swift
    /// try RemindersSchemaV2.snapshot().validateRowIdentityForSync()
    /// ```
    func validateRowIdentityForSync() throws(ChangeLogError) {
        for (table, normal) in zip(tables, normalizedTables) where table.sync == .synced {
            let use =
                "declare a TEXT primary key holding a UUID (Column(\"id\", .text).primaryKey()) or a 16-byte "
                + "BLOB UUID, or make the table local-only (sync: .localOnly)"
            guard case .table = table.kind else {
                throw ChangeLogError(
                    .unsuitableRowIdentity, table: table.name,
                    "a virtual table cannot be synced: its rows are derived from other tables",
                    fix: "declare it with sync: .localOnly and fill it from the synced tables")
            }
            guard !normal.primaryKey.isEmpty else {
                throw ChangeLogError(
                    .unsuitableRowIdentity, table: table.name,
                    "a synced table without a primary key is keyed by its rowid, which every device numbers on its "
                        + "own, so two devices would give different rows the same identity",
                    fix: use)
            }
            for key in normal.primaryKey {
                let column = normal.column(key)
                if column?.isAutoincrement == true || column?.type == "INTEGER" {
                    throw ChangeLogError(
                        .unsuitableRowIdentity, table: table.name,
                        "the primary key column \(column?.name ?? key) is an INTEGER (a rowid alias): every device "
                            + "counts from 1, so two devices would create different rows with the same key",
                        fix: use)
                }
                guard column?.type == "TEXT" || column?.type == "BLOB" else {
                    throw ChangeLogError(
                        .unsuitableRowIdentity, table: table.name,
                        "the primary key column \(column?.name ?? key) has type \(column?.type ?? "?"); synced keys "
                            + "must be TEXT or BLOB so they can hold globally unique ids",
                        fix: use)
                }
            }
        }
    }
}
