import Foundation
import SyncProtocol

/// The ``SchemaRules`` of each dataset's schema versions, read from storage once: a version's
/// definition never changes once recorded (the first hello with one records it), so a push reads
/// none. That a version has no definition is remembered for ``unknownFor`` only, since a hello of
/// a client that sends one may record it at any time, through this server or another over the
/// same storage.
///
/// ```swift
/// let rules = try cache.rules(dataset: "family", version: push.schemaVersion)
/// ```
final class SchemaRulesCache: Sendable {
    private struct Key: Hashable {
        let dataset: String
        let version: SchemaVersion
    }

    private enum Entry {
        case rules(SchemaRules)
        /// No definition was recorded when it was read, at this uptime in nanoseconds.
        case absent(readAt: UInt64)
    }

    static let unknownFor: UInt64 = 2_000_000_000
    private let storage: any SyncStorage
    private let entries: LockedState<[Key: Entry]> = LockedState([:])

    init(storage: any SyncStorage) {
        self.storage = storage
    }

    /// The rules of `version` of `dataset`, or nil when no hello recorded its definition.
    func rules(dataset: String, version: SchemaVersion) throws(ServerError) -> SchemaRules? {
        let key = Key(dataset: dataset, version: version)
        let now = DispatchTime.now().uptimeNanoseconds
        switch entries.withLock({ $0[key] }) {
        case .rules(let rules): return rules
        case .absent(let readAt) where now - readAt < Self.unknownFor: return nil
        default: break
        }
        let rules = try storage.schemaDefinition(of: dataset, version: version).map {
            SchemaRules($0, version: version)
        }
        entries.withLock { $0[key] = rules.map(Entry.rules) ?? .absent(readAt: now) }
        return rules
    }

    /// Forgets that `version` of `dataset` had no definition: a hello has just recorded one.
    func definitionRecorded(dataset: String, version: SchemaVersion) {
        entries.withLock { entries in
            if case .absent = entries[Key(dataset: dataset, version: version)] {
                entries[Key(dataset: dataset, version: version)] = nil
            }
        }
    }
}
