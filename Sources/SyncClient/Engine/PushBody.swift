import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

/// A push's body written straight from the queue's entries: the bytes ``SyncRequests/encode(_:_:)``
/// (`JSONEncoder`) and ``CanonicalJSONWriter`` write for the same changes as `Change`s, without
/// making them: encoding through `Encodable` costs several times the rest of reading and sending a
/// change, and making a `Change` per entry (two dictionaries, hashed by name) only for
/// ``CanonicalJSONWriter`` to sort their members again, and releasing it, is a large share of what
/// is left. An entry holds its names in its table's
/// column order, the same array for every entry of a table: they are put in canonical order (by
/// their UTF-8 bytes) once per array, not once per change.
///
/// ```swift
/// let body = try PushBody.encode(entries, schemaVersion: announced.version, site: site)
/// ```
enum PushBody {
    static func encode(
        _ entries: [PendingEntry], schemaVersion: SchemaVersion, site: SiteID,
        protocolVersion: Int = ProtocolVersion.current, after: Int64? = nil
    ) throws(SyncError) -> Data {
        var writer = CanonicalJSONWriter(capacity: 256 * entries.count + 256)
        var keyOrder = MemberOrder()
        var columnOrder = MemberOrder()
        do {
            try writer.writePush(
                protocolVersion: protocolVersion, schemaVersion: schemaVersion, site: site, after: after,
                changeCount: entries.count
            ) { writer, index in
                let entry = entries[index]
                let columns = columnOrder.order(of: entry.columns)
                let key = keyOrder.order(of: entry.keyColumns)
                try writer.writeChange(
                    clock: entry.clock,
                    columns: { writer in
                        try writer.writeMembers(count: columns.count) { member in
                            (entry.columns[columns[member]], WireValue(entry.values[columns[member]]))
                        }
                    },
                    key: { writer in
                        try writer.writeMembers(count: key.count) { member in
                            (entry.keyColumns[key[member]], WireValue(entry.keyValues[key[member]]))
                        }
                    }, op: entry.operation, seq: entry.sequence, site: site,
                    table: entry.table)
            }
        } catch {
            throw SyncError(.store, "cannot encode the push request: \(error)")
        }
        return writer.data
    }

    /// The canonical order of the last list of names it was asked for (the positions of the names
    /// sorted by their UTF-8 bytes), kept while the next list is the same array: comparing an
    /// array with itself looks at its storage, not at its names.
    private struct MemberOrder {
        private var names: [String] = []
        private var order: [Int] = []
        private static let identities: [[Int]] = [[], [0]]

        mutating func order(of names: [String]) -> [Int] {
            if names.count < Self.identities.count { return Self.identities[names.count] }
            if names != self.names {
                self.names = names
                order = names.indices.sorted { names[$0].utf8.lexicographicallyPrecedes(names[$1].utf8) }
            }
            return order
        }
    }
}
