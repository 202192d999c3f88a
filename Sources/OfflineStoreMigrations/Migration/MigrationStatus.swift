import Foundation
import OfflineStoreSQLite
import SyncProtocol

/// What a database says about its migrations, read without the app's code: the ledger of
/// applied stages and the plan the app last migrated with (stored beside the ledger).
/// `ostore status` and `ostore check` are built on it.
///
/// ```swift
/// let status = try MigrationStatus.read(from: db)
/// print(status.schemaVersion ?? "new database", status.pendingStages.count)
/// for problem in try MigrationStatus.problems(in: db) { print(problem) }
/// ```
public struct MigrationStatus: Sendable {
    /// The version the ledger says the database is at; nil without a ledger.
    public var schemaVersion: Schema.Version?
    /// The fingerprint of the declared schema at ``schemaVersion``, as recorded when it was applied.
    public var fingerprint: String?
    /// The fingerprint of the declared schema at ``schemaVersion`` without sync modes (what SQLite
    /// stores), from the plan the app recorded; nil when no plan was recorded.
    public var structureFingerprint: String?
    /// The same fingerprint of what the file holds now: equal to ``structureFingerprint`` when the
    /// file matches its declared version.
    public var liveStructureFingerprint: String
    public var appliedStages: [AppliedStage]
    /// Stages of the recorded plan the ledger has not applied.
    public var pendingStages: [PendingStage]

    public static func read(from db: Database) throws -> MigrationStatus {
        let entries = try MigrationLedger.entries(db)
        let plan = try recordedPlan(db)
        let current = entries.last.flatMap { $0.position < plan.count ? plan[$0.position] : nil }
        return MigrationStatus(
            schemaVersion: entries.last?.toVersion, fingerprint: entries.last?.fingerprint,
            structureFingerprint: current?.schemaText.sha256Hex,
            liveStructureFingerprint: try SchemaSnapshot(liveDatabase: db).canonicalText(includingSyncModes: false)
                .sha256Hex,
            appliedStages: entries.map {
                AppliedStage(
                    position: $0.position, kind: $0.kind, fromVersion: $0.fromVersion, toVersion: $0.toVersion,
                    checksum: $0.checksum, appliedAt: $0.appliedAt, duration: $0.duration, runs: $0.runs,
                    adopted: $0.adopted)
            },
            pendingStages: plan.dropFirst(entries.count).map(\.stage))
    }

    /// Everything wrong with the database: integrity, foreign keys, and the ledger versus the
    /// recorded plan and the live schema. Empty when all is well.
    /// See <https://www.sqlite.org/pragma.html#pragma_integrity_check>.
    public static func problems(in db: Database) throws -> [String] {
        var problems: [String] = []
        let integrity = try db.fetchAll(String.self, "PRAGMA integrity_check")
        if integrity != ["ok"] { problems += integrity.map { "integrity: \($0)" } }
        for row in try db.fetchAll("PRAGMA foreign_key_check").prefix(50) {
            problems.append(
                "foreign key: \(try row.decode(String.self, at: 0)) rowid "
                    + "\(try row.decode(Int64?.self, at: 1).map(String.init) ?? "-") references a missing row of "
                    + "\(try row.decode(String.self, at: 2))")
        }
        guard try MigrationLedger.exists(db) else {
            problems.append(
                "ledger: the database has no migration ledger (\(MigrationLedger.tableName)); it was not created "
                    + "by OfflineStore's migrator, or the ledger was dropped: opening it with the app adopts it "
                    + "when it matches a declared version")
            return problems
        }
        let entries = try MigrationLedger.entries(db)
        for (offset, entry) in entries.enumerated() where entry.position != offset {
            problems.append("ledger: position \(offset) is missing (next recorded is \(entry.position))")
            break
        }
        let plan = try recordedPlan(db)
        for entry in entries {
            guard entry.position < plan.count else {
                problems.append("ledger: stage at position \(entry.position) is not in the recorded plan")
                continue
            }
            if plan[entry.position].stage.checksum != entry.checksum {
                problems.append(
                    "ledger: stage \(entry.fromVersion?.description ?? "create") → \(entry.toVersion) has checksum "
                        + "\(entry.checksum) but the recorded plan has \(plan[entry.position].stage.checksum)")
            }
        }
        if let last = entries.last, last.position < plan.count {
            let declared = Set(plan[last.position].schemaText.split(separator: "\n").map(String.init))
            let live = Set(
                try SchemaSnapshot(liveDatabase: db).canonicalText(includingSyncModes: false)
                    .split(separator: "\n").map(String.init))
            for line in declared.subtracting(live).sorted() {
                problems.append("schema: declared at \(last.toVersion) but missing or different in the file: \(line)")
            }
            for line in live.subtracting(declared).sorted() {
                problems.append("schema: in the file but not declared at \(last.toVersion): \(line)")
            }
        }
        return problems
    }

    private struct RecordedStep {
        var stage: PendingStage
        var schemaText: String
    }

    private static func recordedPlan(_ db: Database) throws -> [RecordedStep] {
        guard try db.tableExists(MigrationLedger.planTableName) else { return [] }
        return try db.fetchAll(
            """
            SELECT position, kind, fromVersion, toVersion, checksum, schemaText
            FROM main.\(identifier: MigrationLedger.planTableName) ORDER BY position
            """
        ).map { row in
            RecordedStep(
                stage: PendingStage(
                    position: try row.decode(at: 0), kind: try row.decode(at: 1),
                    fromVersion: (try row.decode(String?.self, at: 2)).flatMap(Schema.Version.init),
                    toVersion: Schema.Version(try row.decode(String.self, at: 3)) ?? Schema.Version(0, 0, 0),
                    checksum: try row.decode(at: 4)),
                schemaText: try row.decode(at: 5))
        }
    }
}

extension String {
    var sha256Hex: String { SHA256.hexDigest(self) }
}
