import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension Change {
    /// A local change as pushed: its place in the queue becomes the per-site `seq`. Built from the
    /// values by position, each dictionary once.
    init(_ entry: PendingEntry, site: SiteID) {
        self.init(
            table: entry.table, key: Self.wireValues(entry.keyColumns, entry.keyValues),
            op: entry.operation, columns: Self.wireValues(entry.columns, entry.values),
            clock: entry.clock, site: site, seq: entry.sequence)
    }

    /// Values by name (a table's column names are unique, so each is set once).
    private static func wireValues(_ names: [String], _ values: [DatabaseValue]) -> [String: WireValue] {
        var byName = [String: WireValue](minimumCapacity: names.count)
        for (name, value) in zip(names, values) { byName[name] = WireValue(value) }
        return byName
    }
}

extension IncomingChange {
    /// A pulled change as the change log applies it.
    init(_ change: Change) {
        self.init(
            table: change.table, primaryKey: change.key.mapValues(\.databaseValue),
            operation: change.op,
            columns: change.columns.mapValues(\.databaseValue),
            clock: change.clock,
            siteID: change.site.bytes)
    }
}

extension SchemaDescription {
    /// What a store announces: its version, its synced tables with their columns, their
    /// ``SchemaDefinition`` and its fingerprint.
    init(_ schema: SchemaSnapshot) {
        var tables: [String: [String]] = [:]
        for table in schema.tables where table.sync == .synced { tables[table.name] = table.columns.map(\.name) }
        let definition = SchemaDefinition(schema)
        self.init(
            version: schema.version ?? SchemaVersion(0, 0), fingerprint: definition.fingerprint, tables: tables,
            definition: definition)
    }
}
