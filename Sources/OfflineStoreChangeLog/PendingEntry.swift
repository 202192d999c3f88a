import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// A pending change as the queue reads it, its values by position: what
/// ``ChangeLog/pendingChanges(_:after:limit:_:)`` hands a caller that converts changes into its own
/// type (the sync engine's wire changes) without the dictionaries of ``PendingChange``.
package struct PendingEntry {
    package var sequence: Int64
    package var table: String
    /// The key's columns and values, in key order.
    package var keyColumns: [String]
    package var keyValues: [DatabaseValue]
    package var operation: PendingChange.Operation
    /// The columns it carries (every column of an insert, the changed one of an update, none for a
    /// delete) and their values as they are now, in the same order.
    package var columns: [String]
    package var values: [DatabaseValue]
    package var clock: ChangeClock
}

/// What reading one batch of the queue keeps per table: its definition and key, and the statement
/// reading a row by key (normalising a definition to find its key, or building the query, cost
/// more than reading the row).
struct PendingTables {
    let schema: SchemaSnapshot
    private var tables: [Int64: PendingTable?] = [:]
    /// The last table asked for: a batch's entries are mostly of one table, in runs.
    private var last: (id: Int64, table: PendingTable?)?

    init(schema: SchemaSnapshot) { self.schema = schema }

    /// The table with that number in the log; nil for one no longer in the schema. `name` reads
    /// the log's name for it, only the first time.
    mutating func table(_ id: Int64, named name: () throws -> DatabaseValue, _ db: Database) throws -> PendingTable? {
        if let last, last.id == id { return last.table }
        let table: PendingTable?
        if let known = tables[id] {
            table = known
        } else {
            guard case .text(let name) = try name() else { return nil }
            table = try schema.table(named: name).map { try PendingTable($0, db) }
            tables[id] = table
        }
        last = (id, table)
        return table
    }

    /// The table of all of the next `limit` entries after `sequence` in `log` (with its number in
    /// the log) when they are all of one table of the schema whose key is one column, which
    /// ``PendingTable/joinedEntries(tableID:after:limit:in:_:_:)`` reads with their rows; nil
    /// otherwise (mixed tables, a composite key, none). Reads the log's table numbers only.
    mutating func soleTable(after sequence: Int64, limit: Int, in log: String, _ db: Database) throws
        -> (id: Int64, table: PendingTable)?
    {
        let window = try db.cachedStatement(
            """
            SELECT min(tableID), max(tableID)
            FROM (SELECT tableID FROM \(log) WHERE seq > ? AND site = 0 ORDER BY seq LIMIT ?)
            """)
        defer { window.reset() }
        try window.bind(.integer(sequence), toParameter: 1)
        try window.bind(.integer(Int64(limit)), toParameter: 2)
        guard try window.step(arguments: nil), case .integer(let id) = try window.value(at: 0),
            try window.value(at: 1) == .integer(id)
        else { return nil }
        let name = try db.cachedStatement(
            "SELECT name FROM \(quoteIdentifier(Metadatabase.schemaName)).ostore_tables WHERE id = ?")
        defer { name.reset() }
        try name.bind(.integer(id), toParameter: 1)
        guard try name.step(arguments: nil), let table = try self.table(id, named: { try name.value(at: 0) }, db),
            table.keyColumns.count == 1
        else { return nil }
        return (id, table)
    }
}

/// One table of the schema as the queue reads it.
final class PendingTable {
    let definition: TableDefinition
    let keyColumns: [String]
    /// `SELECT * FROM main."table" WHERE "key" = ?1 AND …`: a row as it is now, for a push.
    let read: Statement

    init(_ definition: TableDefinition, _ db: Database) throws {
        self.definition = definition
        keyColumns = ChangeTracker.keyColumns(of: definition)
        read = try db.cachedStatement(
            "SELECT * FROM main.\(quoteIdentifier(definition.name)) WHERE \(ChangeLog.keyMatch(keyColumns))")
    }

    /// The rows of this table waiting in the stash for their parent, by key (see
    /// ``waitingEntry(_:_:tableID:key:in:_:)``); read once, the first time an entry's row is
    /// missing (an object lives for one batch).
    private var waiting: [[DatabaseValue]: [String: DatabaseValue]]?

    /// The change the current row of `entries` (`seq, tableID, name, pk, columnName, clock`) of
    /// `log` stands for, with the row's values as they are now; nil for a row changed and then
    /// deleted, which is pushed as its delete alone.
    func entry(_ entries: Statement, in log: String, _ db: Database) throws -> PendingEntry? {
        guard
            case (var entry, let logged)? = try logged(
                entries.value(at: 0), key: entries.value(at: 3), columnName: entries.value(at: 4),
                clock: entries.value(at: 5))
        else { return nil }
        guard logged != .deletion else { return entry }
        for (index, value) in entry.keyValues.enumerated() { try read.bind(value, toParameter: index + 1) }
        defer { read.reset() }
        guard try read.step(arguments: entry.keyValues) else {
            return try waitingEntry(
                entry, logged, tableID: entries.value(at: 1), key: entries.value(at: 3), in: log, db)
        }
        try Self.fill(&entry, logged, names: read.columnNames) { try read.value(at: $0) }
        return entry
    }

    /// An entry whose row is not in its table, with the row's values from the stash when it waits
    /// there for its parent (orphan resolution took it out with its values, this store's edits
    /// included): pushed in its place in the queue, so a change made after it (the delete of the
    /// parent it was moved away from) never reaches the server first (Protocol §8.4). Nil when
    /// the row is not there either (changed and then deleted), or the log holds a deletion of
    /// its key at least as new as the entry (the waiting row is then another life of the key, not
    /// the one this entry changed; a deletion before the entry is an earlier life's).
    func waitingEntry(
        _ entry: PendingEntry, _ logged: LoggedColumn, tableID: DatabaseValue, key: DatabaseValue, in log: String,
        _ db: Database
    ) throws -> PendingEntry? {
        if waiting == nil { waiting = try WaitingRows.of(definition.name, keyColumns: keyColumns, db) }
        guard let values = waiting?[entry.keyValues] else { return nil }
        let deleted = SQL(
            sql:
                "SELECT 1 FROM \(log) WHERE tableID = ? AND pk = ? AND columnName = \(LoggedColumn.deletion.sqlLiteral) AND clock >= ?",
            arguments: [tableID, key, .integer(entry.clock.packed)])
        guard try db.fetchOne(deleted) == nil else { return nil }
        var entry = entry
        switch logged {
        case .creation:
            let present = definition.columns.compactMap { column in
                values[column.name.lowercased()].map { (column.name, $0) }
            }
            entry.operation = .insert
            entry.columns = present.map(\.0)
            entry.values = present.map(\.1)
        case .column(let columnName):
            guard let value = values[columnName.lowercased()] else { return nil }
            entry.operation = .update
            entry.columns = [columnName]
            entry.values = [value]
        case .deletion:
            break
        }
        return entry
    }

    /// Up to `limit` entries after `sequence`, all of this table (numbered `tableID` in the log; see
    /// ``PendingTables/soleTable(after:limit:in:_:)``), read with their rows by one statement (the
    /// log joined to the table by its one key column), each entry with something to push handed to
    /// `body`: the entries ``entry(_:)`` makes, without a statement bound, stepped and reset for
    /// every row (a third of what reading an entry cost). Returns how many entries it read and the
    /// last one's place.
    func joinedEntries(
        tableID: Int64, after sequence: Int64, limit: Int, in log: String, _ db: Database,
        _ body: (PendingEntry) throws -> Void
    ) throws -> (count: Int, last: Int64) {
        let key = quoteIdentifier(keyColumns[0])
        // `+c.pk` has no affinity, as the value `entry(_:)` binds has none: the key column's
        // affinity and collation decide the comparison the same way. `+c.tableID` keeps SQLite
        // from reading the table's entries by the log's unique index and sorting all of them for
        // every batch: the entries are read in place order.
        let entries = try db.cachedStatement(
            """
            SELECT c.seq, c.pk, c.columnName, c.clock, r.\(key) IS NOT NULL, r.*
            FROM \(log) AS c LEFT JOIN main.\(quoteIdentifier(definition.name)) AS r
                ON c.columnName <> \(LoggedColumn.deletion.sqlLiteral) AND r.\(key) = +c.pk
            WHERE c.seq > ?1 AND c.site = 0 AND +c.tableID = ?2 ORDER BY c.seq LIMIT ?3
            """)
        defer { entries.reset() }
        try entries.bind(.integer(sequence), toParameter: 1)
        try entries.bind(.integer(tableID), toParameter: 2)
        try entries.bind(.integer(Int64(limit)), toParameter: 3)
        // The row's columns, one array for the whole batch (a push body orders each array once),
        // taken after the first step (which prepares the statement again if the schema changed).
        var names: [String]?
        var count = 0
        var last = sequence
        while try entries.step(arguments: nil) {
            count += 1
            let columns = names ?? Array(entries.columnNames.dropFirst(5))
            names = columns
            guard
                case (var entry, let logged)? = try logged(
                    entries.value(at: 0), key: entries.value(at: 1), columnName: entries.value(at: 2),
                    clock: entries.value(at: 3))
            else { continue }
            last = entry.sequence
            if logged != .deletion {
                guard try entries.value(at: 4) == .integer(1) else {
                    // No row: waiting in the stash, or changed and then deleted, pushed as its
                    // delete alone (as `entry(_:in:_:)`).
                    if let waiting = try waitingEntry(
                        entry, logged, tableID: .integer(tableID), key: entries.value(at: 1), in: log, db)
                    {
                        try body(waiting)
                    }
                    continue
                }
                try Self.fill(&entry, logged, names: columns) { try entries.value(at: 5 + $0) }
            }
            try body(entry)
        }
        return (count, last)
    }

    /// A log entry of this table (`seq`, `pk`, `columnName`, `clock`) as a delete, with what it
    /// dates; nil when it is not in the form the triggers write.
    private func logged(_ sequence: DatabaseValue, key: DatabaseValue, columnName: DatabaseValue, clock: DatabaseValue)
        throws -> (PendingEntry, LoggedColumn)?
    {
        guard case .integer(let sequence) = sequence else { return nil }
        let keyValues = try LoggedKey.values(key, columnCount: keyColumns.count)
        guard case .text(let columnName) = columnName else { return nil }
        guard case .integer(let packed) = clock else {
            // A clock of 0 would lose every comparison on other sites: refused, as a decode was.
            throw ChangeLogError(
                .metadatabase, table: definition.name, "the change log entry \(sequence) has no integer clock",
                fix: "run `ostore check --db PATH` on the store; its metadatabase may be damaged")
        }
        let entry = PendingEntry(
            sequence: sequence, table: definition.name, keyColumns: keyColumns, keyValues: keyValues,
            operation: .delete, columns: [], values: [], clock: ChangeClock(packed: packed) ?? .zero)
        return (entry, LoggedColumn(stored: columnName))
    }

    /// An insert's every column (a creation entry) or an update's one column, from a row whose
    /// columns are `names` and `value(index)`; a deletion entry stays the delete it is.
    private static func fill(
        _ entry: inout PendingEntry, _ logged: LoggedColumn, names: [String], value: (Int) throws -> DatabaseValue
    ) throws {
        switch logged {
        case .creation:
            entry.operation = .insert
            entry.columns = names
            entry.values = try names.indices.map { try value($0) }
        case .column(let columnName):
            entry.operation = .update
            entry.columns = [columnName]
            entry.values = [try names.firstIndex(of: columnName).map { try value($0) } ?? .null]
        case .deletion:
            break
        }
    }
}
