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

    /// A delete newer than the creation (or a delete of a row never inserted) hides the row.
    var isDeleted: Bool {
        guard let deleted else { return false }
        return created.map { deleted > $0 } ?? true
    }

    /// Folds one change in by the protocol's merge rule (per-column last-writer-wins; a delete
    /// wins over updates of the row and only a newer insert brings it back), so a snapshot gives
    /// a new client what applying the whole log would.
    mutating func merge(_ change: FoldChange) {
        let incoming = change.version
        let isLive = created != nil && !isDeleted
        switch change.op {
        case .delete:
            let oldest = ChangeVersion(clock: -1, site: Data())
            guard incoming > (created ?? oldest), incoming > (deleted ?? oldest) else { return }
            deleted = incoming
            cells = [:]
        case .insert:
            if let deleted, deleted > incoming { return }
            if !isLive {
                // A new row, or one brought back (a delete dropped its cells): every column is
                // written unless an update that arrived before the insert left a newer value, as
                // a client applies such an update from its stash after the insert.
                created = incoming
                mergeColumns(change, incoming, creation: nil)
                return
            }
            mergeColumns(change, incoming, creation: created)
            if let created, incoming > created { self.created = incoming }
        case .update:
            if isDeleted { return }
            mergeColumns(change, incoming, creation: created)
        }
    }

    private mutating func mergeColumns(_ change: FoldChange, _ incoming: ChangeVersion, creation: ChangeVersion?) {
        let oldest = creation ?? ChangeVersion(clock: 0, site: Data())
        cells.reserveCapacity(cells.count + change.columns.count)
        for (name, value) in change.columns {
            if let cell = cells[name] {
                guard incoming > cell.version else { continue }
            } else if incoming < oldest {
                continue
            }
            cells[name] = Cell(value: value, version: incoming)
        }
    }
}
