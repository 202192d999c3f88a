import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Queues again this store's own entries of the rows that came back from the stash (an orphan
    /// waited there for its parent, ``resolveOrphans(after:foreignKeys:_:outcome:links:deletedParents:)``).
    /// A push while the row was out of its table read its entries from the stash
    /// (``PendingTable/waitingEntry(_:_:tableID:key:in:_:)``), or passed them over (a
    /// build before that, a row it did not find there) and the acknowledged mark went past them
    /// with a later change, or goes past them when that push is acknowledged after the row came
    /// back: a local edit made before the row left would otherwise never be pushed.
    ///
    /// The queue keeps its order: a change made after the row's edit (the delete of the parent the
    /// edit moved the row away from, say) must not reach the server first, or a peer that applies
    /// it alone finds the row orphaned and deletes it, on every site. So the rows' entries at or
    /// below the mark (but a deletion entry: the row is present, so a local deletion of it is
    /// older than what brought it back) go to the end of the queue, followed by every queued entry
    /// from the first one of these rows on, all in their order. Entries pushed already go again;
    /// the server keeps the versions it has (same clock, same site). The rows' own entries are
    /// few; the queue moves only when a row that came back has entries of its own, which takes a
    /// local edit of a row that another site moved to a parent not here yet.
    func requeueLocalEntries(
        ofRowsBack batch: PreparedChanges, _ refusals: [RefusedIncomingChange], _ db: Database
    ) throws {
        let refused = Set(refusals.map(\.index))
        var done: Set<[DatabaseValue]> = []
        let pushed = try pushedSequence(db)
        var passedOver: [Int64] = []
        var firstQueued: Int64?
        for (index, plan) in batch.plans.enumerated() {
            guard batch.changes[index].operation == .insert, !refused.contains(index), let place = plan.table,
                plan.refused == nil, plan.refusedBeforeClock == nil
            else { continue }
            let table = batch.tables[place]
            let tableID = try trackedTableID(table.definition.name, db)
            guard done.insert([.integer(Int64(tableID)), plan.loggedKey]).inserted else { continue }
            let inTable = SQL(
                sql:
                    "SELECT 1 FROM main.\(quoteIdentifier(table.definition.name)) WHERE \(Self.keyMatch(table.keyColumns))",
                arguments: plan.keyValues)
            guard try db.fetchOne(inTable) != nil else { continue }
            let places = try db.fetchAll(
                Int64.self,
                SQL(
                    sql: Self.ownEntriesSQL, arguments: [.integer(Int64(tableID)), plan.loggedKey]))
            passedOver += places.filter { $0 <= pushed }
            if let first = places.first(where: { $0 > pushed }) { firstQueued = min(firstQueued ?? first, first) }
        }
        // From the first passed-over entry's mark on, or from the first queued entry of these rows.
        guard let after = passedOver.isEmpty ? firstQueued.map({ $0 - 1 }) : pushed else { return }
        let list = "[" + passedOver.map(String.init).joined(separator: ",") + "]"
        try db.execute(SQL(sql: Self.requeueSQL, arguments: [.text(list), .integer(after)]))
    }

    /// The places of a row's own entries but its deletion, in order (`?1` the table's number,
    /// `?2` the key as the log stores it).
    private static let ownEntriesSQL = """
        SELECT seq FROM ostore_meta.ostore_changes
        WHERE tableID = ?1 AND pk = ?2 AND site = 0 AND columnName <> \(LoggedColumn.deletion.sqlLiteral) ORDER BY seq
        """

    /// Moves this store's entries at the places `?1` (a JSON array) and after the place `?2` to
    /// new places at the end of the queue, in their order (SQLite reads the whole SELECT before
    /// it writes, as it reads the table it inserts into).
    private static let requeueSQL = """
        INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site)
        SELECT tableID, pk, columnName, clock, site FROM ostore_meta.ostore_changes
        WHERE site = 0 AND (seq IN (SELECT value FROM json_each(?1)) OR seq > ?2)
        ORDER BY seq
        ON CONFLICT (tableID, pk, columnName) DO UPDATE SET seq = excluded.seq
        """
}
