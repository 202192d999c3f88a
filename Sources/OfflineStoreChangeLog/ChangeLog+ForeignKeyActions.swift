import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Foreign keys off while a batch applies (outside a transaction, where SQLite honours the
    /// pragma): their actions (`ON DELETE CASCADE`) would otherwise delete or change rows without
    /// a trace in the log, e.g. the tags of a reminder taken out while it waits for its list, which
    /// then never come back. ``resolveOrphans(after:foreignKeys:_:outcome:links:deletedParents:)`` does their work by
    /// the sync rules and proves none is left. Inside a caller's transaction the pragma cannot
    /// change; keys stay as they are. See <https://www.sqlite.org/foreignkeys.html#fk_enable>.
    func withoutForeignKeyActions<Result>(_ db: Database, _ body: (_ foreignKeys: ForeignKeyMode) throws -> Result)
        throws -> Result
    {
        guard try db.fetchValue(Bool.self, "PRAGMA foreign_keys") == true else { return try body(.notEnforced) }
        guard !db.isInsideTransaction else { return try body(.enforced) }
        try db.execute("PRAGMA foreign_keys = OFF")
        defer { try? db.execute("PRAGMA foreign_keys = ON") }
        return try body(.suspended)
    }

    /// Whether a foreign key of a table in `main` has an action (`CASCADE`, `SET NULL`,
    /// `SET DEFAULT`): with keys enforced it changes rows no change names, and a cascaded delete's
    /// own children are then found by no search of the batch's rows.
    /// See <https://www.sqlite.org/foreignkeys.html#fk_actions>.
    static func hasForeignKeyActions(_ db: Database) throws -> Bool {
        try db.fetchValue(
            Bool.self,
            """
            SELECT EXISTS (
                SELECT 1 FROM main.sqlite_schema AS m JOIN pragma_foreign_key_list(m.name, 'main') AS f
                WHERE m.type = 'table' AND (f.on_delete NOT IN ('NO ACTION', 'RESTRICT')
                    OR f.on_update NOT IN ('NO ACTION', 'RESTRICT')))
            """) ?? true
    }
}
