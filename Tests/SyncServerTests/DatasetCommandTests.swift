import Foundation
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// `ostore-server dataset`, run as an operator runs it.
@Suite struct DatasetCommandTests {
    private func dataset(_ arguments: [String], data: String) throws -> (status: Int32, output: String, error: String) {
        let result = try run(try builtProduct("ostore-server").path, ["dataset"] + arguments + ["--data", data])
        return (
            result.status, String(decoding: result.output, as: UTF8.self), String(decoding: result.error, as: UTF8.self)
        )
    }

    @Test func allowMajorBoundsHowFarADatasetsSchemaMayMove() throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        #expect(try dataset(["create", "notes"], data: data).output == "created dataset notes\n")
        let bounded = try dataset(["create", "family", "--allow-major", "2"], data: data)
        #expect(bounded.status == 0 && bounded.output == "created dataset family (may move up to major 2)\n")
        #expect(
            try dataset(["list"], data: data).output
                == "family\tschema -\t0 changes\tmay move up to major 2\nnotes\tschema -\t0 changes\n")

        let allowed = try dataset(["allow-major", "--dataset", "notes", "3"], data: data)
        #expect(allowed.status == 0 && allowed.output == "dataset notes may move up to major 3\n")
        #expect(
            try SQLiteSyncStorage(directory: URL(fileURLWithPath: data), folds: false).datasets().first {
                $0.name == "notes"
            }?.allowedMajorVersion == 3)

        let notANumber = try dataset(["allow-major", "--dataset", "notes", "two"], data: data)
        #expect(notANumber.status == 2 && notANumber.error.contains("two is not a major schema version"))
        let tooLarge = try dataset(["allow-major", "--dataset", "notes", "1000000000"], data: data)
        #expect(tooLarge.status == 2 && tooLarge.error.contains("give a number from 0 to 999999999"))
        let noDataset = try dataset(["allow-major", "3"], data: data)
        #expect(noDataset.status == 2 && noDataset.error.contains("--dataset NAME"))
        let missing = try dataset(["allow-major", "--dataset", "nosuch", "3"], data: data)
        #expect(missing.status == 2 && missing.error.contains("there is no dataset nosuch"))

        // A dataset a device moved to 3.0 never moves back: an allowance below it is refused.
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: data), folds: false)
        _ = try storage.recordSchema(
            SchemaDescription(version: SchemaVersion(3, 0), fingerprint: "f3", tables: [:]), dataset: "notes",
            mayMoveDataset: true)
        let below = try dataset(["allow-major", "--dataset", "notes", "2"], data: data)
        #expect(below.status == 1 && below.error.contains("is at schema 3.0.0 already"), "\(below.error)")
    }
}
