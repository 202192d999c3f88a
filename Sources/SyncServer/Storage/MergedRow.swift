import Foundation
import SyncProtocol
import SyncStoreBridge

/// One row of the merged state as `state_rows` keeps it (and `server_rows` from server schema 1.3): its newest
/// creation and deletion versions and, packed into the same record (``MergedRow/packedCells``),
/// the merged value of each of its columns with the version that wrote it. A fold reads a row's
/// record once, merges every change of its batch into it here, and writes it once: one B-tree
/// write per row per fold, where a cell of its own cost one per changed column.
///
/// ```swift
/// var row = MergedRow()
/// row.merge(FoldChange(change, key: keyText))  // the protocol's merge rule, in memory
/// ```
struct MergedRow: Equatable, Sendable {
    /// A column's merged value and the version that wrote it.
    struct Cell: Equatable, Sendable {
        var value: WireValue
        var version: ChangeVersion
    }

    var created: ChangeVersion?
    var deleted: ChangeVersion?
    var cells: Cells = [:]

    /// The row's versions as the merge rule reads them.
    var versions: MergeRule.Row { MergeRule.Row(created: created, deleted: deleted) }

    /// A delete newer than the creation (or a delete of a row never inserted) hides the row.
    var isDeleted: Bool { versions.isDeleted }

    /// Folds one change in by the protocol's merge rule (``MergeRule``), so a snapshot gives a new
    /// client what applying the whole log would. The state has no stash: the columns of an update
    /// that came before its row's insert are kept as the row's cells, and merged with the insert
    /// when it comes as a client merges its stash after it.
    mutating func merge(_ change: FoldChange) {
        let incoming = change.version
        let row = versions
        let verdict = MergeRule.verdict(of: change.op, at: incoming, row: row, isPresent: created != nil && !isDeleted)
        switch verdict {
        case .superseded:
            return
        case .delete:
            deleted = incoming
            cells = [:]
            return
        case .create:
            created = incoming
            cells.removeAll { !MergeRule.waitingColumnStays($0.version, afterCreationAt: incoming) }
        case .merge(newCreation: true):
            created = incoming
        case .waitForRow, .merge(newCreation: false):
            break
        }
        cells.reserveCapacity(cells.count + change.columns.count)
        for (name, value) in change.columns
        where MergeRule.writesColumn(at: incoming, over: cells[name]?.version, row: row) {
            cells[name] = Cell(value: value, version: incoming)
        }
        // The columns the old creation dated and this insert did not write are dated by the new one.
        if verdict == .merge(newCreation: true) {
            cells.redate(to: incoming) { MergeRule.isDatedByCreation($0, row: row) }
        }
    }
}
