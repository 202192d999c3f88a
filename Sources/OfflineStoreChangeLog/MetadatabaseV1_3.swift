import OfflineStoreMigrations

/// Version 1.3 of the metadatabase adds the change journal (``ChangeJournal``): the tracking
/// triggers append each change there, in order, with no index and no conflict clause, and a fold
/// moves the journal into the keyed log (`ostore_changes`) before anything reads or merges it.
/// A metadatabase at 1.2 upgrades with its log as it is (an empty journal).
enum MetadatabaseV1_3: LibrarySchema {
    static let versionIdentifier: Schema.Version = "1.3.0"
    static let models: [any Model.Type] = MetadatabaseV1_2.models + [JournalEntry.self]

    /// One change as the triggers saw it, waiting to be folded into the keyed log. `seq` is the
    /// rowid: the order of the entries, and with the keyed log's newest place at the fold, the
    /// entry's place in the queue (see ``ChangeJournal``). Every entry is a local change (`site` 0
    /// once folded). The rowid is the only B-tree: an append touches the right-most page alone.
    enum JournalEntry: Model {
        static let tableDefinition = TableDefinition(ChangeJournal.tableName, sync: .localOnly, options: [.strict]) {
            Column("seq", .integer).primaryKey()
            Column("tableID", .integer).notNull()
            Column("pk", .any).notNull()
            Column("columnName", .text).notNull()
            Column("clock", .integer).notNull()
        }
    }
}
