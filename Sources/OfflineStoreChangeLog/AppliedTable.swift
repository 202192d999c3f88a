import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// One synced table as a batch applies changes to it: its ``TableShape``, its number in the
/// metadatabase, and its statements, prepared once for the batch (an insert or update is prepared
/// per set of columns it writes).
final class AppliedTable {
    // Its properties go without dynamic exclusivity checks, as PageLog's do, for the same reason.
    enum Write { case insert, update }

    let shape: TableShape
    var definition: TableDefinition { shape.definition }
    var keyColumns: [String] { shape.keyColumns }
    var isKey: [Bool] { shape.isKey }
    @exclusivity(unchecked) private var number: Int?
    @exclusivity(unchecked) private var rowState: Statement?
    @exclusivity(unchecked) private var versions: Statement?
    @exclusivity(unchecked) private var writes: [Write: [[Int]: Statement]] = [:]
    @exclusivity(unchecked) private var lastWrite: (kind: Write, written: [Int], statement: Statement)?
    /// Inserts of ``PageLog/rowsPerInsert`` rows, by the columns they write.
    @exclusivity(unchecked) private var multiRowInserts: [[Int]: Statement] = [:]
    /// Their arguments, bound in place from one buffer reused from one insert to the next.
    @exclusivity(unchecked) private var arguments = BulkArguments()
    @exclusivity(unchecked) private var appTriggers: Bool?

    init(_ shape: TableShape) {
        self.shape = shape
    }

    func tableID(_ look: () throws -> Int) rethrows -> Int {
        if let number { return number }
        let id = try look()
        number = id
        return id
    }

    func forgetNumber() { number = nil }

    /// Whether the app has triggers of its own on this table (in `main` or TEMP; the store's
    /// `ostore_` ones aside), looked up once per batch.
    /// See <https://www.sqlite.org/schematab.html>.
    func hasAppTriggers(_ db: Database) throws -> Bool {
        if let appTriggers { return appTriggers }
        let found = try ChangeLog.hasAppTriggers(on: [definition.name.lowercased()], db)
        appTriggers = found
        return found
    }

    /// Whether a row is present and every log entry of it (column name, clock, site id): the
    /// key's values bound first (`?1`…), then the table's number and the logged key. The first
    /// row always comes (the joins are outer), with NULL entry columns when the log has none.
    func rowStateStatement(_ db: Database) throws -> Statement {
        if let rowState { return rowState }
        let (tableID, pk) = ("?\(keyColumns.count + 1)", "?\(keyColumns.count + 2)")
        let statement = try db.cachedStatement(
            """
            SELECT EXISTS (SELECT 1 FROM main.\(quoteIdentifier(definition.name)) WHERE \(ChangeLog.keyMatch(keyColumns))),
                c.columnName, c.clock, s.siteID
            FROM (SELECT 1)
            LEFT JOIN ostore_meta.ostore_changes AS c ON c.tableID = \(tableID) AND c.pk = \(pk)
            LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
            """)
        rowState = statement
        return statement
    }

    /// The log entries of a row (column name, clock, site id), the table's number and the logged
    /// key bound as `?1` and `?2`: ``rowStateStatement(_:)`` without the row's presence.
    func versionsStatement(_ db: Database) throws -> Statement {
        if let versions { return versions }
        let statement = try db.cachedStatement(
            """
            SELECT c.columnName, c.clock, s.siteID FROM ostore_meta.ostore_changes AS c
            LEFT JOIN ostore_meta.ostore_sites AS s ON s.id = c.site
            WHERE c.tableID = ?1 AND c.pk = ?2
            """)
        versions = statement
        return statement
    }

    /// Writes the non-nil `values` (by column position): an insert of a row unless one with its
    /// key is present (`ON CONFLICT` on the key `DO NOTHING`: another constraint still fails), or
    /// an update of the row with `keyValues`. Returns whether a row was written. The statement
    /// for that set of columns is prepared once.
    /// See <https://www.sqlite.org/lang_upsert.html>.
    @discardableResult
    func write(_ kind: Write, _ values: [DatabaseValue?], keyValues: [DatabaseValue], _ db: Database) throws -> Bool {
        var written: [Int] = []
        written.reserveCapacity(values.count)
        for (position, value) in values.enumerated() where value != nil { written.append(position) }
        let statement: Statement
        // A page's changes mostly write the same columns, one after the other.
        if let last = lastWrite, last.kind == kind, last.written == written {
            statement = last.statement
        } else {
            statement = try self.statement(kind, written, db)
            lastWrite = (kind, written, statement)
        }
        for (index, position) in written.enumerated() { try statement.bind(values[position]!, toParameter: index + 1) }
        for (index, value) in keyValues.enumerated() {
            try statement.bind(value, toParameter: written.count + index + 1)
        }
        try statement.runToCompletion(arguments: nil)
        return db.changesCount > 0
    }

    /// Inserts `rows` (values by column position, all with values for the same columns) in their
    /// order, each unless a row with its key is present, as ``write(_:_:keyValues:_:)`` would one by
    /// one; ``PageLog/rowsPerInsert`` rows by one statement, which on a failure leaves the rows it
    /// wrote before it (`OR FAIL`, see ``PageLog/write(_:)``) for the page's rollback. Returns how
    /// many rows were written.
    func insert(_ rows: [[DatabaseValue?]], _ db: Database) throws -> Int {
        guard let first = rows.first else { return 0 }
        guard rows.count == PageLog.rowsPerInsert else {
            var inserted = 0
            for row in rows where try write(.insert, row, keyValues: [], db) { inserted += 1 }
            return inserted
        }
        var written: [Int] = []
        for (position, value) in first.enumerated() where value != nil { written.append(position) }
        let statement: Statement
        if let known = multiRowInserts[written] {
            statement = known
        } else {
            let names = written.map { quoteIdentifier(definition.columns[$0].name) }
            let row = "(" + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")"
            statement = try db.cachedStatement(
                "INSERT OR FAIL INTO main.\(quoteIdentifier(definition.name)) (\(names.joined(separator: ", "))) VALUES "
                    + Array(repeating: row, count: rows.count).joined(separator: ", ") + " ON CONFLICT ("
                    + keyColumns.map(quoteIdentifier).joined(separator: ", ") + ") DO NOTHING")
            multiRowInserts[written] = statement
        }
        arguments.removeAll()
        for row in rows {
            for position in written { arguments.append(row[position]!) }
        }
        try statement.execute(arguments)
        return db.changesCount
    }

    private func statement(_ kind: Write, _ written: [Int], _ db: Database) throws -> Statement {
        if let known = writes[kind]?[written] { return known }
        let names = written.map { quoteIdentifier(definition.columns[$0].name) }
        let table = "main.\(quoteIdentifier(definition.name))"
        let sql: String
        switch kind {
        case .insert:
            sql =
                "INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES ("
                + Array(repeating: "?", count: names.count).joined(separator: ", ") + ") ON CONFLICT ("
                + keyColumns.map(quoteIdentifier).joined(separator: ", ") + ") DO NOTHING"
        case .update:
            let keys = keyColumns.enumerated().map { "\(quoteIdentifier($1)) = ?\(names.count + $0 + 1)" }
            sql =
                "UPDATE \(table) SET \(names.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: ", ")) "
                + "WHERE \(keys.joined(separator: " AND "))"
        }
        let statement = try db.cachedStatement(sql)
        writes[kind, default: [:]][written] = statement
        return statement
    }
}
