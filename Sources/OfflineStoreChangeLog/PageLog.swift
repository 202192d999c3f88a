import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// The log's entries of a page's rows while the page applies whole (see
/// ``ChangeLog/readPageLog(_:_:)``): each row's versions, as the changes applied so far
/// left them, so that a later change of the same row merges against what an earlier one recorded;
/// the page's new rows, inserted together (``insert(_:into:_:)``); and the entries the page
/// records, written together by ``write(_:)`` (a statement per entry costs several times more)
/// before anything reads the log again and at the end of the page.
final class PageLog {
    // One apply uses it, on one thread, and no access to a property overlaps another access to
    // it: its properties go without dynamic exclusivity checks, which would run on every access.
    static let entriesPerWrite = 100
    static let rowsPerInsert = 100

    struct Entry {
        var tableID: Int
        var key: DatabaseValue
        var column: LoggedColumn
        var clock: ChangeClock
        var site: Int
    }

    /// Per change (by its place in the batch), the slot of its row in ``versions``; nil for a row
    /// read from the log when it applies.
    let slots: [Int?]
    /// Per row, its versions.
    @exclusivity(unchecked) private(set) var versions: [RowVersions]
    /// Per row, whether more than one change of the page changes it: only then do its versions
    /// follow what the page records.
    private let repeated: [Bool]
    /// Entries of keys and columns the log has none of yet (known from ``versions``), and the others.
    @exclusivity(unchecked) private var newEntries: [Entry] = []
    @exclusivity(unchecked) private var otherEntries: [Entry] = []
    /// New rows waiting to be inserted, all of one table and with values for the same columns.
    @exclusivity(unchecked) private var rows: [[DatabaseValue?]] = []
    @exclusivity(unchecked) private var rowTable: AppliedTable?
    /// The arguments of the entries' writes, reused from one to the next.
    @exclusivity(unchecked) private var arguments = BulkArguments()

    init(slots: [Int?], versions: [RowVersions], repeated: [Bool]) {
        self.slots = slots
        self.versions = versions
        self.repeated = repeated
        newEntries.reserveCapacity(slots.count)
    }

    /// Keeps an entry to write; a new one (of a key and column the log and the page have none of)
    /// is written with the other new ones, after which the others update what they find. A row
    /// changed again later in the page sees it in its ``versions``.
    func record(_ entry: Entry, slot: Int?, version: ChangeVersion) {
        guard let slot else {
            otherEntries.append(entry)
            return
        }
        if versions[slot][entry.column] == nil {
            newEntries.append(entry)
        } else {
            otherEntries.append(entry)
        }
        if repeated[slot] { versions[slot][entry.column] = version }
    }

    func isRepeated(_ slot: Int) -> Bool { repeated[slot] }

    /// Forgets the column versions of a row a delete dropped from the log (its creation and
    /// deletion versions stay), for the page's later changes of that row.
    func forgetColumnVersions(slot: Int) {
        guard repeated[slot] else { return }
        versions[slot].columns = [:]
    }

    /// Whether two rows of one table have values for the same columns.
    private static func sameColumns(_ one: [DatabaseValue?], _ other: [DatabaseValue?]) -> Bool {
        for position in one.indices {
            switch (one[position], other[position]) {
            case (.none, .some), (.some, .none): return false
            default: continue
            }
        }
        return true
    }

    /// Holds back the insert of a new row (`values` by column position), written with the others by
    /// ``writeRows(_:)``: when ``rowsPerInsert`` wait, before a row of another table or with other
    /// columns, and before anything else writes or reads.
    func insert(_ values: [DatabaseValue?], into table: AppliedTable, _ db: Database) throws {
        if let first = rows.first, rowTable !== table || !Self.sameColumns(first, values) {
            try writeRows(db)
        }
        rowTable = table
        rows.append(values)
        if rows.count == Self.rowsPerInsert { try writeRows(db) }
    }

    /// Inserts the rows held back, in their order, as their own inserts would have (``AppliedTable/insert(_:_:)``).
    /// Each was new when its change was read (no entries in the log); one present after all (a row
    /// written without its entries, by another program or before the log tracked its table) throws,
    /// and the page is applied again change by change, where its insert merges into it.
    func writeRows(_ db: Database) throws {
        guard let table = rowTable, !rows.isEmpty else { return }
        defer { rows.removeAll(keepingCapacity: true) }
        guard try table.insert(rows, db) == rows.count else { throw RowPresentAfterAll() }
    }

    struct RowPresentAfterAll: Error {}

    /// Writes the rows held back, then the recorded entries into the log: the new ones inserted
    /// ``entriesPerWrite`` by one statement, the others by the upsert one entry at a time runs.
    ///
    /// Statements that write many rows take `OR FAIL`: with SQLite's default (`ABORT`) each keeps a
    /// statement journal to take back its own rows on a failure, which beyond 64 KiB spills to a
    /// temporary file, many times the writes of the page's rows and entries themselves.
    /// Here a failure rolls back the whole page, which is applied again change by change.
    /// See <https://www.sqlite.org/lang_conflict.html>.
    func write(_ db: Database) throws {
        try writeRows(db)
        var start = 0
        while start < newEntries.count {
            let rows = newEntries.count - start >= Self.entriesPerWrite ? Self.entriesPerWrite : 1
            let statement = try db.cachedStatement(rows == 1 ? ChangeLog.recordVersionSQL : Self.insertNewSQL)
            try bind(newEntries[start..<start + rows], to: statement)
            start += rows
        }
        for entry in otherEntries {
            try bind(CollectionOfOne(entry), to: db.cachedStatement(ChangeLog.recordVersionSQL))
        }
        newEntries.removeAll(keepingCapacity: true)
        otherEntries.removeAll(keepingCapacity: true)
    }

    /// Binds the entries' values, five each, in place from one reused buffer (``BulkArguments``:
    /// binding each value as a copy of its own, and clearing the bindings, would weigh on the apply
    /// thread), and runs the statement.
    private func bind(_ entries: some Collection<Entry>, to statement: Statement) throws {
        arguments.removeAll()
        for entry in entries {
            arguments.append(Int64(entry.tableID))
            arguments.append(entry.key)
            arguments.append(text: entry.column.stored)
            arguments.append(entry.clock.packed)
            arguments.append(Int64(entry.site))
        }
        try statement.execute(arguments)
    }

    /// ``entriesPerWrite`` new entries, in their order (each takes the next place in the queue, as
    /// the upsert gives a new entry).
    private static let insertNewSQL =
        "INSERT OR FAIL INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site) VALUES "
        + Array(repeating: "(?, ?, ?, ?, ?)", count: entriesPerWrite).joined(separator: ", ")
}
