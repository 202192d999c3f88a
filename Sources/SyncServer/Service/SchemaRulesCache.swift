import Foundation
import SyncProtocol

/// The ``SchemaRules`` of each dataset's recorded definitions, read from storage per dataset and
/// kept: a version's definition never changes once recorded (the first hello with one records
/// it), so a push under a version with a definition reads nothing. A push under a version without
/// one is checked by the rules ``SchemaRules/governing(_:among:)`` picks; since a hello may record
/// a definition at any time, through this server or another over the same storage, the
/// definitions are read again for such a push once ``rereadAfter`` has passed, at most once per
/// dataset in that time whatever versions pushes name.
///
/// ```swift
/// let rules = try cache.rules(dataset: "family", version: push.schemaVersion)
/// ```
final class SchemaRulesCache: Sendable {
    private struct Recorded {
        let rules: [SchemaVersion: SchemaRules]
        /// When they were read, as uptime in nanoseconds.
        let readAt: UInt64
    }

    static let rereadAfter: UInt64 = 2_000_000_000
    private let storage: any SyncStorage
    private let datasets: LockedState<[String: Recorded]> = LockedState([:])

    init(storage: any SyncStorage) {
        self.storage = storage
    }

    /// The rules a change pushed under `version` of `dataset` is checked by, or nil when the
    /// dataset has no definition of the version's major.
    func rules(dataset: String, version: SchemaVersion) throws(ServerError) -> SchemaRules? {
        let now = DispatchTime.now().uptimeNanoseconds
        let cached = datasets.withLock { $0[dataset] }
        if let cached {
            if let own = cached.rules[version] { return own }
            if now - cached.readAt < Self.rereadAfter { return SchemaRules.governing(version, among: cached.rules) }
        }
        var rules: [SchemaVersion: SchemaRules] = [:]
        for (recorded, definition) in try storage.schemaDefinitions(of: dataset) {
            rules[recorded] = cached?.rules[recorded] ?? SchemaRules(definition, version: recorded)
        }
        datasets.withLock { $0[dataset] = Recorded(rules: rules, readAt: now) }
        return SchemaRules.governing(version, among: rules)
    }

    /// Forgets what is kept of `dataset`: a hello has just recorded a definition of it.
    func definitionRecorded(dataset: String) {
        _ = datasets.withLock { $0.removeValue(forKey: dataset) }
    }
}
