import Foundation
import OfflineStore
import SyncProtocol
import SyncStoreBridge

extension Change {
    /// A local change as pushed: its place in the queue becomes the per-site `seq`.
    init(_ pending: PendingChange, site: SiteID) {
        self.init(
            table: pending.table, key: pending.primaryKey.mapValues(WireValue.init),
            op: Operation(rawValue: pending.operation.rawValue)!, columns: pending.columns.mapValues(WireValue.init),
            clock: ChangeClock(packed: pending.clock.packed)!, site: site, seq: pending.sequence)
    }
}

extension RemoteChange {
    /// A pulled change as the change log applies it.
    init(_ change: Change) {
        self.init(
            table: change.table, primaryKey: change.key.mapValues(\.databaseValue),
            operation: PendingChange.Operation(rawValue: change.op.rawValue)!,
            columns: change.columns.mapValues(\.databaseValue),
            clock: HybridTimestamp(milliseconds: change.clock.milliseconds, counter: change.clock.counter),
            siteID: change.site.bytes)
    }
}

extension SchemaDescription {
    /// What a store announces: its version, fingerprint and synced tables with their columns.
    init(_ schema: SchemaSnapshot) {
        let version = schema.version ?? Schema.Version(0, 0)
        var tables: [String: [String]] = [:]
        for table in schema.tables where table.sync == .synced { tables[table.name] = table.columns.map(\.name) }
        self.init(
            version: SchemaVersion(version.major, version.minor, version.patch), fingerprint: schema.fingerprint,
            tables: tables)
    }
}
