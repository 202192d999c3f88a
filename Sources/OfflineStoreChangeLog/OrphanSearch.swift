import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite
import SyncProtocol

/// The search's passes: each link looks at the rows written to its child table and at the
/// children of its parent table's deleted rows that it has not looked at yet, and takes out the
/// orphans it finds (which adds them to the deleted rows). It goes round until a pass finds none,
/// as a deleted orphan orphans its own children, in any table, in the same pass or the next.
struct OrphanSearch {
    let links: [OrphanLink]
    private(set) var rows: TouchedRows
    /// Searching every child table whole (a connection that does not enforce keys).
    let whole: Bool
    /// Per link, how many of its child's written rows and its parent's deleted rows it has seen.
    private var seenWritten: [Int]
    private var seenDeleted: [Int]
    private var passes = 0

    /// What the batch's deletes took out of columns a key refers to other than the parent's key.
    let deletedParents: DeletedParentValues

    init(links: [OrphanLink], rows: TouchedRows, whole: Bool, deletedParents: DeletedParentValues) {
        self.deletedParents = deletedParents
        self.links = links
        self.rows = rows
        self.whole = whole
        seenWritten = Array(repeating: 0, count: links.count)
        seenDeleted = Array(repeating: 0, count: links.count)
    }

    /// One pass over every link; whether it found an orphan.
    mutating func pass(_ log: ChangeLog, _ db: Database, outcome: inout ApplyOutcome) throws -> Bool {
        var found = false
        for (index, link) in links.enumerated() {
            var orphans: [[DatabaseValue]] = []
            if whole {
                orphans = try link.orphans(.whole, db)
            } else {
                let written = rows.written[link.child.lowercased()] ?? []
                let deleted = rows.deleted[link.parent.lowercased()] ?? []
                if seenWritten[index] < written.count {
                    let suspects = try link.suspects(among: written[seenWritten[index]...], db)
                    if !suspects.isEmpty { orphans += try link.orphans(.written(suspects), db) }
                }
                if !link.childrenByKey {
                    // Rows written to the parent (its referred columns updated) count at the first pass.
                    let parentWritten = passes == 0 && rows.written[link.parent.lowercased()] != nil
                    if parentWritten || seenDeleted[index] < deleted.count { orphans += try link.orphans(.whole, db) }
                } else if seenDeleted[index] < deleted.count {
                    orphans += try link.orphans(.childrenOf(Array(deleted[seenDeleted[index]...])), db)
                }
                (seenWritten[index], seenDeleted[index]) = (written.count, deleted.count)
            }
            var taken: Set<[DatabaseValue]> = []
            for orphan in orphans {
                let childKey = Array(orphan[..<link.childKey.count])
                guard taken.insert(childKey).inserted else { continue }
                found = true
                guard
                    try log.resolve(
                        orphan: childKey, parentKey: Array(orphan[link.childKey.count...]), of: link, db,
                        deletedParents: deletedParents, outcome: &outcome)
                else { continue }
                rows.noteDeleted(link.child, childKey)
            }
        }
        passes += 1
        return found
    }
}
