import OfflineStoreMigrations

extension Migrator {
    /// Validates `plan`; nothing touches a database. `releasedUpTo` simulates an older app release
    /// that only knew the plan up to that version.
    ///
    /// Declared with the change log, which gives the migrator its bookkeeping in the user's file
    /// (``ChangeLogBookkeeping``): a stage that records changes notes them there, whether or not the
    /// change log is open on the connection that migrates, and rows the change log's permanent
    /// triggers note while a stage runs are forgotten.
    public init(
        plan: any MigrationPlan.Type, releasedUpTo: Schema.Version? = nil, options: Options = Options()
    ) throws(MigrationError) {
        try self.init(plan: plan, releasedUpTo: releasedUpTo, options: options, bookkeeping: LogCoverage.self)
    }
}

/// The change log's side of ``ChangeLogBookkeeping``: its tables in the user's file, and its keys.
extension LogCoverage: ChangeLogBookkeeping {
    static func keyColumns(of table: TableDefinition) -> [String] { ChangeTracker.keyColumns(of: table) }

    static func keyExpression(_ columns: [String], row: String) -> String {
        ChangeTracker.keyExpression(columns, row: row)
    }
}
