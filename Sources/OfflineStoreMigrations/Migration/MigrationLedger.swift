import Foundation
import OfflineStoreSQLite

/// The ledger of applied stages, a table in the main database (`ostore_migrations`), plus the
/// schema cookie the migrator last verified (`ostore_migration_state`), which lets an up-to-date
/// open skip re-reading the whole schema.
///
/// See <https://www.sqlite.org/pragma.html#pragma_schema_version>.
enum MigrationLedger {
    static let tableName = "ostore_migrations"
    static let stateTableName = "ostore_migration_state"
    static let planTableName = "ostore_migration_plan"

    struct Entry: Sendable, Hashable {
        var position: Int
        var kind: String
        var fromVersion: Schema.Version?
        var toVersion: Schema.Version
        var checksum: String
        var fingerprint: String
        var appliedAt: Date
        var duration: Double
        var runs: Int
        var adopted: Bool
    }

    static func exists(_ db: Database) throws -> Bool { try db.tableExists(tableName) }

    static func createIfNeeded(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS main.\(quoteIdentifier(tableName)) (
                    position INTEGER PRIMARY KEY,
                    kind TEXT NOT NULL,
                    fromVersion TEXT,
                    toVersion TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    fingerprint TEXT NOT NULL,
                    appliedAt REAL NOT NULL,
                    durationSeconds REAL NOT NULL,
                    runs INTEGER NOT NULL DEFAULT 1,
                    adopted INTEGER NOT NULL DEFAULT 0
                ) STRICT
                """)
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS main.\(quoteIdentifier(stateTableName)) (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    verifiedSchemaCookie INTEGER NOT NULL
                ) STRICT
                """)
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS main.\(quoteIdentifier(planTableName)) (
                    position INTEGER PRIMARY KEY,
                    kind TEXT NOT NULL,
                    fromVersion TEXT,
                    toVersion TEXT NOT NULL,
                    checksum TEXT NOT NULL,
                    schemaText TEXT NOT NULL
                ) STRICT
                """)
    }

    /// Stores the plan the app migrated with (its steps, checksums and each version's canonical
    /// schema), so tools that do not have the app's code (`ostore status`, `ostore check`) can
    /// list pending stages and compare the live schema with the declared one.
    static func recordPlan(_ steps: [MigrationStep], in db: Database) throws {
        let stored = try db.fetchAll(
            String.self, "SELECT checksum FROM main.\(identifier: planTableName) ORDER BY position")
        guard stored != steps.map(\.checksum) else { return }
        // An older release must not erase the manifest of the newer plan that wrote the file.
        guard stored.count <= steps.count else { return }
        try db.execute("DELETE FROM main.\(identifier: planTableName)")
        for step in steps {
            try db.execute(
                """
                INSERT INTO main.\(identifier: planTableName) (position, kind, fromVersion, toVersion, checksum, schemaText)
                VALUES (\(step.position), \(step.kind.rawValue), \(step.fromVersion?.description),
                    \(step.toVersion.description), \(step.checksum), \(step.target.canonicalText(includingSyncModes: false)))
                """)
        }
    }

    static func entries(_ db: Database) throws -> [Entry] {
        guard try exists(db) else { return [] }
        return try db.fetchAll(
            """
            SELECT position, kind, fromVersion, toVersion, checksum, fingerprint, appliedAt, durationSeconds, runs, adopted
            FROM main.\(identifier: tableName) ORDER BY position
            """
        ).map { row in
            Entry(
                position: try row.decode(at: 0), kind: try row.decode(at: 1),
                fromVersion: (try row.decode(String?.self, at: 2)).flatMap(Schema.Version.init),
                toVersion: Schema.Version(try row.decode(String.self, at: 3)) ?? Schema.Version(0, 0, 0),
                checksum: try row.decode(at: 4), fingerprint: try row.decode(at: 5),
                appliedAt: try row.decode(at: 6), duration: try row.decode(at: 7), runs: try row.decode(at: 8),
                adopted: try row.decode(at: 9))
        }
    }

    static func record(_ step: MigrationStep, duration: Double, adopted: Bool, in db: Database) throws {
        try db.execute(
            """
            INSERT INTO main.\(identifier: tableName)
                (position, kind, fromVersion, toVersion, checksum, fingerprint, appliedAt, durationSeconds, adopted)
            VALUES (\(step.position), \(step.kind.rawValue), \(step.fromVersion?.description), \(step.toVersion.description),
                \(step.checksum), \(step.fingerprint), \(Date()), \(duration), \(adopted))
            ON CONFLICT (position) DO UPDATE SET
                runs = runs + 1, appliedAt = excluded.appliedAt, durationSeconds = excluded.durationSeconds
            """)
    }

    /// `PRAGMA schema_version`: SQLite bumps it on every schema change, by anyone.
    static func schemaCookie(_ db: Database) throws -> Int {
        try db.fetchValue(Int.self, "PRAGMA main.schema_version") ?? 0
    }

    static func verifiedSchemaCookie(_ db: Database) throws -> Int? {
        guard try db.tableExists(stateTableName) else { return nil }
        return try db.fetchValue(
            Int.self, "SELECT verifiedSchemaCookie FROM main.\(identifier: stateTableName) WHERE id = 1")
    }

    /// Records the current schema cookie as verified; call last in a transaction, after any DDL.
    static func markSchemaVerified(_ db: Database, steps: [MigrationStep]) throws {
        try recordPlan(steps, in: db)
        try db.execute(
            """
            INSERT INTO main.\(identifier: stateTableName) (id, verifiedSchemaCookie) VALUES (1, \(try schemaCookie(db)))
            ON CONFLICT (id) DO UPDATE SET verifiedSchemaCookie = excluded.verifiedSchemaCookie
            """)
    }
}
