import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

extension ChangeLog {
    /// Whether the log knows a deletion of the row `key` of the table `tableID`, the key compared
    /// with `collation` when one is given (a NOCASE key: a scan of the table's entries, for an
    /// orphan only).
    private func isDeleted(_ tableID: Int, _ key: DatabaseValue, collation: String?, _ db: Database) throws -> Bool {
        guard let collation else { return try version(tableID, key, .deletion, db) != nil }
        return try db.fetchValue(
            Bool.self,
            SQL(
                sql: "SELECT EXISTS (SELECT 1 FROM ostore_meta.ostore_changes WHERE tableID = ? "
                    + "AND columnName = \(LoggedColumn.deletion.sqlLiteral) "
                    + "AND pk = ? COLLATE \(quoteIdentifier(collation)))",
                arguments: [.integer(Int64(tableID)), key])) ?? false
    }

    /// Takes an orphan out: deleted by a new local delete when its parent's deletion is known,
    /// stashed with its values until the parent arrives otherwise. Returns whether the row went;
    /// throws for a key holding NULL (a composite key of a rowid table may), which no `=` matches.
    func resolve(
        orphan childKey: [DatabaseValue], parentKey: [DatabaseValue], of link: OrphanLink, _ db: Database,
        deletedParents: DeletedParentValues, outcome: inout ApplyOutcome
    ) throws -> Bool {
        let row = try db.fetchOne(Self.rowSQL("SELECT * FROM", link.child, link.childKey, childKey, set: [:]))
        try db.execute(Self.rowSQL("DELETE FROM", link.child, link.childKey, childKey, set: [:]))
        guard db.changesCount > 0 else {
            // Gone already (an ON DELETE CASCADE of an orphan taken out before it); or, with a
            // NULL in its key, out of reach: every pass would find it again, for ever.
            guard !childKey.contains(.null) else {
                throw ChangeLogError(
                    .invalidChange, table: link.child,
                    "a row without its parent cannot be taken out by its key (a key column holds NULL); "
                        + "give the row a key without NULL or delete it, then apply again")
            }
            return false
        }
        let parentID = try trackedTableID(link.parent, db)
        let childID = try trackedTableID(link.child, db)
        let parentIsDeleted: Bool
        if let places = link.parentKeyPlaces {
            // The parent's logged key has its key's order, which the foreign key's columns may not.
            var logged = parentKey
            for (index, place) in places.enumerated() { logged[place] = parentKey[index] }
            parentIsDeleted = try isDeleted(parentID, Self.loggedKey(logged), collation: link.parentKeyCollation, db)
        } else {
            // A key that refers to other columns than the parent's key: the batch's deletes noted
            // the values they took out of them. The log knows only keys, and a deleted key equal
            // to the referred value is another row's (deleting the child for it would lose it on
            // every site).
            parentIsDeleted = deletedParents.contains(parentKey, in: link.parent, columns: link.parentColumns)
        }
        if parentIsDeleted {
            // A new local delete, newer than anything this store has seen: dated by the parent's
            // deletion, it could be older than the child's creation and lose on other sites,
            // which keep the child (moved meanwhile to a live parent) while this one has dropped
            // it for good.
            try recordVersion(childID, Self.loggedKey(childKey), .deletion, clock.now(), 0, db)
            // Its own children by a unique column of it are orphans of a deleted parent too.
            if let row { deletedParents.noteDeleted(link.child, values: try row.valuesByColumnName()) }
            outcome.applied += 1
        } else if let row {
            let values = try row.valuesByColumnName()
            let created = try version(childID, Self.loggedKey(childKey), .creation, db) ?? .oldest
            try stash(
                IncomingChange(
                    table: link.child, primaryKey: Dictionary(uniqueKeysWithValues: zip(link.childKey, childKey)),
                    operation: .insert, columns: values, clock: ChangeClock(packed: created.clock) ?? .zero,
                    siteID: created.site.isEmpty ? identity.siteID : created.site),
                reason: "parent row in \(link.parent) not present yet", db)
            // The row's versions stay: it comes back as it was, and a change older than one of
            // its columns, arriving meanwhile, stays superseded.
            outcome.stashed += 1
        }
        return true
    }
}
