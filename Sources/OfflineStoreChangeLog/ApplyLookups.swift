import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// What applying one batch looks up again and again, kept for the batch: each table's
/// ``AppliedTable``, the numbers the metadatabase gives sites, and the held statements.
final class ApplyLookups {
    // Its properties go without dynamic exclusivity checks, as PageLog's do, for the same reason.
    /// The batch's tables (``PreparedChanges/tables``), each made when a change first needs it.
    private let shapes: [TableShape]
    @exclusivity(unchecked) private var tables: [AppliedTable?]
    /// The numbers of the batch's sites (``PreparedChanges/sites``), by place.
    @exclusivity(unchecked) private var siteNumbers: [Int?]
    @exclusivity(unchecked) private var keyedTexts: [String: String] = [:]
    @exclusivity(unchecked) private var recordVersion: Statement?
    /// What the batch's deletes took out of columns a foreign key refers to other than the key.
    let deletedParents: DeletedParentValues
    /// The keys of each table's rows waiting in the stash (``WaitingRows``), by table name, read
    /// once per batch: the inserts the batch stashes behind them are of keys already there, and
    /// orphan resolution stashes rows only after the batch.
    @exclusivity(unchecked) private var waitingKeys: [String: Set<[DatabaseValue]>] = [:]

    init(_ shapes: [TableShape], siteCount: Int, deletedParents: DeletedParentValues) {
        self.deletedParents = deletedParents
        self.shapes = shapes
        tables = [AppliedTable?](repeating: nil, count: shapes.count)
        siteNumbers = [Int?](repeating: nil, count: siteCount)
    }

    /// The keys of `table`'s rows waiting in the stash, `read` asked once per table.
    func waitingKeys(of table: String, _ read: () throws -> Set<[DatabaseValue]>) rethrows -> Set<[DatabaseValue]> {
        if let known = waitingKeys[table] { return known }
        let keys = try read()
        waitingKeys[table] = keys
        return keys
    }

    /// The table at `place` in the batch's tables.
    func table(_ place: Int) -> AppliedTable {
        if let table = tables[place] { return table }
        let table = AppliedTable(shapes[place])
        tables[place] = table
        return table
    }

    /// The number of the site at `place` in the batch's sites, `look` asked once.
    func siteNumber(at place: Int, _ look: () throws -> Int) rethrows -> Int {
        if let known = siteNumbers[place] { return known }
        let number = try look()
        siteNumbers[place] = number
        return number
    }

    /// The statement that records a version in the log (``ChangeLog/recordVersionSQL``), held for the batch.
    func recordVersionStatement(_ db: Database) throws -> Statement {
        if let recordVersion { return recordVersion }
        let statement = try db.cachedStatement(ChangeLog.recordVersionSQL)
        recordVersion = statement
        return statement
    }

    /// `VERB main."table" WHERE key = ? AND …` (see ``ChangeLog/rowSQL(_:_:_:_:set:)``), its text made once.
    func keyedSQL(_ verb: String, _ table: String, _ keys: [String]) -> String {
        let name = verb + " " + table
        if let known = keyedTexts[name] { return known }
        let text = ChangeLog.rowSQL(verb, table, keys, keys.map { _ in .null }, set: [:]).text
        keyedTexts[name] = text
        return text
    }

    /// After a savepoint's rollback: a number made inside it is gone from the metadatabase.
    func forgetNumbers() {
        for case let table? in tables { table.forgetNumber() }
        siteNumbers = siteNumbers.map { _ in nil }
    }
}
