import Foundation
import SyncProtocol

/// A stored change as the fold merges it into the state (``MergedRow``): its row (table and the
/// canonical JSON of its key), operation and version, and the columns it writes. A push builds it
/// from the `Change` it decoded, before taking the write lock, and hands it to the folder in
/// memory; the fold builds it from the log's JSON only when nothing in memory holds it (after a
/// restart).
///
/// ```swift
/// let folded = FoldChange(change, key: try change.canonicalKeyJSON())
/// ```
struct FoldChange: Sendable {
    var table: String
    /// The canonical JSON of the row's key: the state's key.
    var key: String
    var op: Change.Operation
    var version: ChangeVersion
    /// The columns it writes, less the key's (the state keeps the key apart), in byte order of
    /// their names (``MergedRow/Cells``'s order).
    var columns: [(name: String, value: WireValue)]

    init(_ change: Change, key: String) {
        table = change.table
        self.key = key
        op = change.op
        version = ChangeVersion(change.clock, change.site)
        var columns: [(name: String, value: WireValue)] = []
        columns.reserveCapacity(change.columns.count)
        // Keys mostly have one column: compared by name, not looked up by hash for every column.
        let onlyKeyColumn = change.key.count == 1 ? change.key.first?.key : nil
        for (name, value) in change.columns {
            let isKey = onlyKeyColumn.map { $0 == name } ?? (change.key[name] != nil)
            if !isKey { columns.append((name, value)) }
        }
        columns.sort { MergedRow.Cells.precedes($0.name, $1.name) }
        self.columns = columns
    }
}
