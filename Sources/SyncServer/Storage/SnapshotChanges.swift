import Foundation
import SyncProtocol

/// A row of the merged state as the changes a snapshot serves (Protocol §10.2), for both backends:
/// a live row is an insert of every column stamped with the row's creation version, then an update
/// for each column written at another version, with that column's own version (so merging with a
/// client's newer edits comes out as it would from the log); a deleted row is its tombstone; a row
/// known only from updates is those updates.
///
/// ```swift
/// let changes = try SnapshotChanges.of(table: "notes", keyText: #"{"id":{"text":"n1"}}"#, row: row.versions, cells: cells)
/// ```
enum SnapshotChanges {
    static func of(
        table: String, keyText: String, row: MergeRule.Row,
        cells: some Sequence<(name: String, value: WireValue, version: ChangeVersion)>
    ) throws -> [Change] {
        let key = try ProtocolJSON.decodeValues(Data(keyText.utf8))
        func stamp(_ version: ChangeVersion) -> (ChangeClock, SiteID)? {
            guard let clock = ChangeClock(packed: version.clock), let site = SiteID(bytes: version.site) else {
                return nil
            }
            return (clock, site)
        }
        let created = row.created.flatMap(stamp)
        if row.isDeleted, let deleted = row.deleted.flatMap(stamp) {
            return [Change(table: table, key: key, op: .delete, clock: deleted.0, site: deleted.1, seq: 0)]
        }
        var values: [String: WireValue] = [:]
        var later: [Change] = []
        for (name, value, version) in cells {
            values[name] = value
            guard let (clock, site) = stamp(version) else { continue }
            if created.map({ $0.0 != clock || $0.1 != site }) ?? true {
                later.append(
                    Change(
                        table: table, key: key, op: .update, columns: [name: value], clock: clock, site: site, seq: 0))
            }
        }
        guard let created else { return later }
        var columns = values
        for (name, value) in key { columns[name] = value }
        return [
            Change(table: table, key: key, op: .insert, columns: columns, clock: created.0, site: created.1, seq: 0)
        ]
            + later
    }

    /// `row` of `table` as a snapshot gives it.
    static func of(table: String, keyText: String, row: MergedRow) throws -> [Change] {
        try of(
            table: table, keyText: keyText, row: row.versions,
            cells: row.cells.lazy.map { (name: $0.name, value: $0.cell.value, version: $0.cell.version) })
    }
}
