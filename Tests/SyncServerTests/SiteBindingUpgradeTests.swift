import Foundation
import OfflineStore
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Storage written by the release before site bindings and major allowances (SQLite server schema
/// 1.4, PostgreSQL migration 3), opened by this one: its sites are bound by their first use after
/// the upgrade, and its datasets stay at their major until the operator allows another.
@Suite("Server storage upgrades: site bindings and major allowances")
struct SiteBindingUpgradeTests {
    private let site = SiteID(bytes: Data(repeating: 0x0A, count: 16))!

    @Test(arguments: StorageBackend.allCases)
    func sitesOfTheReleaseBeforeAreBoundByTheirFirstUseAndDatasetsKeepTheirMajor(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let storage = try storageOfTheReleaseBefore(backend, in: directory)
        #expect(try storage.datasetState("old", site: site).siteHighWater == 3)
        #expect(try storage.datasets().map(\.allowedMajorVersion) == [nil])
        let phone = try storage.createToken(dataset: "old", readOnly: false).id
        let other = try storage.createToken(dataset: "old", readOnly: false).id

        // The phone's next push binds the site it pushed as before the upgrade.
        #expect(
            try storage.storeBatch(
                [change(seq: 4)], site: site, clientSchema: SchemaVersion(1, 0), dataset: "old", token: phone) == 4)
        #expect {
            _ = try storage.storeBatch(
                [change(seq: 5)], site: site, clientSchema: SchemaVersion(1, 0), dataset: "old", token: other)
        } throws: { error in
            (error as? ErrorBody)?.error.code == .siteForbidden
        }
        #expect {
            _ = try storage.claimSite(site, dataset: "old", token: other)
        } throws: { error in
            (error as? ErrorBody)?.error.code == .siteForbidden
        }
        #expect(try storage.claimSite(site, dataset: "old", token: phone) == 4)

        // At 1.0 with no allowance: a new minor moves it, a new major does not until it is allowed.
        let minor = SchemaDescription(version: SchemaVersion(1, 1), fingerprint: "f11", tables: [:])
        #expect(try storage.recordSchema(minor, dataset: "old", mayMoveDataset: true) == SchemaVersion(1, 1))
        let major = SchemaDescription(version: SchemaVersion(2, 0), fingerprint: "f2", tables: [:])
        #expect {
            _ = try storage.recordSchema(major, dataset: "old", mayMoveDataset: true)
        } throws: { error in
            (error as? ErrorBody)?.error.code == .majorNotAllowed
        }
        try storage.allowMajor(2, dataset: "old")
        #expect(try storage.recordSchema(major, dataset: "old", mayMoveDataset: true) == SchemaVersion(2, 0))
    }

    /// A dataset `old` at schema 1.0.0 whose site ``site`` pushed through `seq` 3, written by the
    /// release before, then opened by this one.
    private func storageOfTheReleaseBefore(_ backend: StorageBackend, in directory: TemporaryDirectory) throws
        -> any SyncStorage
    {
        try storageOfAnEarlierRelease(
            backend, in: directory, sqliteVersion: ServerSchemaV1_4.versionIdentifier, postgresMigration: 4,
            sqlite: [
                """
                INSERT INTO server_datasets (id, name, createdAt, schemaVersion, incarnation)
                VALUES (1, 'old', 0, '1.0.0', 'before')
                """,
                "INSERT INTO server_sites (datasetID, site, highSeq) VALUES (1, \(site.bytes), 3)",
            ],
            postgres: """
                INSERT INTO server_datasets (name, schema_version, incarnation) VALUES ('old', '1.0.0', 'before');
                INSERT INTO server_sites (dataset_id, site, high_seq)
                    SELECT id, '\\x0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a'::bytea, 3 FROM server_datasets;
                """)
    }

    private func change(seq: Int64) -> Change {
        Change(
            table: "notes", key: ["id": .text("n\(seq)")], op: .insert, columns: ["title": .text("t")],
            clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: site, seq: seq)
    }
}
