import Foundation
import OfflineStoreSQLite

/// A stage the database has applied, as the ledger records it.
public struct AppliedStage: Sendable, Hashable {
    public var position: Int
    /// `create`, `lightweight` or `custom`.
    public var kind: String
    public var fromVersion: Schema.Version?
    public var toVersion: Schema.Version
    public var checksum: String
    public var appliedAt: Date
    public var duration: Double
    /// How many times it ran (more than once after its objects went missing and it was re-run).
    public var runs: Int
    /// Recorded without running: the database already matched this version when first opened.
    public var adopted: Bool
}

/// A stage the plan has and the database has not applied yet.
public struct PendingStage: Sendable, Hashable {
    public var position: Int
    public var kind: String
    public var fromVersion: Schema.Version?
    public var toVersion: Schema.Version
    public var checksum: String
}

/// The SQL a pending stage would execute (see ``Migrator/dryRun(_:)``).
public struct StagePreview: Sendable, Hashable {
    public var stage: PendingStage
    public var statements: [String]
}

extension Migrator {
    /// The stages recorded in the database's ledger, oldest first (empty for a new database).
    public func appliedStages(_ db: Database) throws -> [AppliedStage] {
        try MigrationLedger.entries(db).map {
            AppliedStage(
                position: $0.position, kind: $0.kind, fromVersion: $0.fromVersion, toVersion: $0.toVersion,
                checksum: $0.checksum, appliedAt: $0.appliedAt, duration: $0.duration, runs: $0.runs,
                adopted: $0.adopted)
        }
    }

    /// The plan's stages the database has not applied yet.
    public func pendingStages(_ db: Database) throws -> [PendingStage] {
        let applied = try MigrationLedger.entries(db).count
        return steps.dropFirst(min(applied, steps.count)).map(\.pending)
    }

    /// The schema version the database is at according to its ledger; nil for a new database.
    public func currentVersion(_ db: Database) throws -> Schema.Version? {
        try MigrationLedger.entries(db).last?.toVersion
    }

    /// The declared schema of `version`, or nil when the plan has no such version.
    public func declaredSchema(_ version: Schema.Version) -> SchemaSnapshot? {
        steps.first { $0.toVersion == version }?.target
    }

    /// Whether every stage of the plan has been applied.
    public func hasCompletedMigrations(_ db: Database) throws -> Bool {
        let entries = try MigrationLedger.entries(db)
        return entries.count == steps.count && (try? verify(entries)) != nil
    }

    /// Runs every pending stage inside one transaction that is then rolled back, and returns
    /// the SQL each stage executed (stage code included). Nothing is modified.
    public func dryRun(_ db: Database) throws(MigrationError) -> [StagePreview] {
        var previews: [StagePreview] = []
        try wrapErrors(stage: nil) {
            try checkUsable(db)
            let entries = try MigrationLedger.entries(db)
            try verify(entries)
            let live = try SchemaSnapshot(liveDatabase: db)
            let isFresh = !live.tables.contains { planTableKeys.contains($0.name.lowercased()) }
            struct RollBack: Error {}
            do {
                try withForeignKeysOff(db) {
                    try db.runTransaction(begin: beginWaitingForWriteLock) { db in
                        for step in steps.dropFirst(entries.count) {
                            let statements = try applyInsideTransaction(
                                step, db: db, isFresh: isFresh, mode: .refuseNonAdditive)
                            previews.append(StagePreview(stage: step.pending, statements: statements))
                        }
                        throw RollBack()
                    }
                }
            } catch is RollBack {}
        }
        return previews
    }
}

extension MigrationStep {
    var pending: PendingStage {
        PendingStage(
            position: position, kind: kind.rawValue, fromVersion: fromVersion, toVersion: toVersion, checksum: checksum)
    }
}
