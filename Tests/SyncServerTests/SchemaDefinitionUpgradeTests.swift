import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Storage written by the release before schema definitions (SQLite server schema 1.6, PostgreSQL
/// migration 5), with a fingerprint recorded by a client of that time, opened by this one: the old
/// fingerprint is still compared with old-style hellos, and the version takes its definition from
/// the first hello that brings one.
@Suite("Server storage upgrades: schema definitions")
struct SchemaDefinitionUpgradeTests {
    @Test(arguments: StorageBackend.allCases)
    func aVersionRecordedBeforeDefinitionsKeepsItsFingerprintAndTakesADefinition(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let storage = try storageOfTheReleaseBefore(backend, in: directory)
        let version = SchemaVersion(1, 0)
        let legacy = SchemaDescription(version: version, fingerprint: "old-build", tables: [:])
        #expect(try storage.recordSchema(legacy, dataset: "old", mayMoveDataset: true) == version)
        var otherLegacy = legacy
        otherLegacy.fingerprint = "other-build"
        #expect {
            _ = try storage.recordSchema(otherLegacy, dataset: "old", mayMoveDataset: true)
        } throws: { error in
            (error as? ErrorBody)?.error.code == .schemaConflict
        }
        #expect(try storage.schemaDefinitions(of: "old")[version] == nil)
        let definition = SchemaDefinition(tables: [
            .init(name: "notes", columns: [.init(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1)])
        ])
        let described = SchemaDescription(
            version: version, fingerprint: definition.fingerprint, tables: [:], definition: definition)
        #expect(try storage.recordSchema(described, dataset: "old", mayMoveDataset: true) == version)
        #expect(try storage.schemaDefinitions(of: "old")[version] == definition)
    }

    /// A dataset `old` at schema 1.0.0 announced with fingerprint `old-build`, written by the
    /// release before, then opened by this one.
    private func storageOfTheReleaseBefore(_ backend: StorageBackend, in directory: TemporaryDirectory) throws
        -> any SyncStorage
    {
        try storageOfAnEarlierRelease(
            backend, in: directory, sqliteVersion: ServerSchemaV1_6.versionIdentifier, postgresMigration: 6,
            sqlite: [
                """
                INSERT INTO server_datasets (id, name, createdAt, schemaVersion, incarnation)
                VALUES (1, 'old', 0, '1.0.0', 'before')
                """,
                "INSERT INTO server_schemas (datasetID, version, fingerprint) VALUES (1, '1.0.0', 'old-build')",
            ],
            postgres: """
                INSERT INTO server_datasets (name, schema_version, incarnation) VALUES ('old', '1.0.0', 'before');
                INSERT INTO server_schemas (dataset_id, version, fingerprint)
                    SELECT id, '1.0.0', 'old-build' FROM server_datasets;
                """)
    }
}
