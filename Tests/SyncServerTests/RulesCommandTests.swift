import Foundation
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// `ostore-server rules check`: a rules file against the schema a dataset's devices announced,
/// or against a definition in a file.
@Suite("ostore-server rules check")
struct RulesCommandTests {
    /// The Reminders sample's schema 1.1.0, as its vector gives it.
    static func definition() throws -> SchemaDefinition {
        let url = DocumentedCode.packageRoot.appendingPathComponent("Protocol/vectors/schema/reminders-1.1.0.json")
        struct Vector: Decodable { var definition: SchemaDefinition }
        return try JSONDecoder().decode(Vector.self, from: Data(contentsOf: url)).definition
    }

    static let fitting = """
        {"tables": {
          "remindersLists": {"read": ["everyone"]},
          "reminders": {"read": [{"column": "listID", "in": {"table": "remindersLists", "select": "id", "where": "name"}}]},
          "tags": {"read": ["everyone"], "write": ["everyone"]},
          "reminderTags": {"read": [{"parent": "reminders"}, {"parent": "tags"}]}
        }}
        """

    @Test func aRulesFileIsCheckedAgainstTheDatasetsAnnouncedSchema() throws {
        let directory = try TemporaryDirectory()
        let server = try builtProduct("ostore-server").path
        let data = ["--data", directory.path("data")]
        #expect(try run(server, ["dataset", "create", "family"] + data).status == 0)
        try Self.fitting.write(toFile: directory.path("rules.json"), atomically: true, encoding: .utf8)

        let early = try run(server, ["rules", "check", "--dataset", "family", directory.path("rules.json")] + data)
        #expect(early.status == 2)
        #expect(String(decoding: early.error, as: UTF8.self).contains("has announced its schema's definition yet"))

        let definition = try Self.definition()
        do {
            let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")), folds: false)
            try storage.recordDefinition(definition, version: SchemaVersion(1, 1), dataset: "family")
        }
        let fits = try run(server, ["rules", "check", "--dataset", "family", directory.path("rules.json")] + data)
        #expect(fits.status == 0, "\(String(decoding: fits.error, as: UTF8.self))")
        #expect(
            String(decoding: fits.output, as: UTF8.self).contains(
                "fits dataset family's schema 1.1.0: 4 tables, 6 filters"))

        let broken = Self.fitting.replacingOccurrences(of: #""where": "name""#, with: #""where": "title""#)
            .replacingOccurrences(of: #""tags": {"read": ["everyone"], "write": ["everyone"]},"#, with: "")
        try broken.write(toFile: directory.path("broken.json"), atomically: true, encoding: .utf8)
        let refused = try run(server, ["rules", "check", "--dataset", "family", directory.path("broken.json")] + data)
        #expect(refused.status == 1)
        let lines = String(decoding: refused.error, as: UTF8.self)
        #expect(lines.contains("tables.reminders.read[0].in.where: the schema has no column title in remindersLists"))
        #expect(lines.contains("the schema's table tags has no rules"))
    }

    @Test func aRulesFileIsCheckedAgainstADefinitionInAFileAndItsFormFirst() throws {
        let directory = try TemporaryDirectory()
        let server = try builtProduct("ostore-server").path
        try JSONEncoder().encode(try Self.definition()).write(to: URL(fileURLWithPath: directory.path("schema.json")))
        try Self.fitting.write(toFile: directory.path("rules.json"), atomically: true, encoding: .utf8)
        let fits = try run(
            server, ["rules", "check", "--schema", directory.path("schema.json"), directory.path("rules.json")])
        #expect(fits.status == 0, "\(String(decoding: fits.error, as: UTF8.self))")

        try #"{"tables": {"tags": {"read": ["all"]}}}"#.write(
            toFile: directory.path("form.json"), atomically: true, encoding: .utf8)
        let form = try run(
            server, ["rules", "check", "--schema", directory.path("schema.json"), directory.path("form.json")])
        #expect(form.status == 1)
        #expect(
            String(decoding: form.error, as: UTF8.self).contains(
                #"tables.tags.read[0]: the only filter given as a string is "everyone""#))

        let neither = try run(server, ["rules", "check", directory.path("rules.json")])
        #expect(neither.status == 2)
        #expect(String(decoding: neither.error, as: UTF8.self).contains("give --dataset NAME or --schema SCHEMA"))
    }

    @Test func rulesSetChecksLikeCheckThenServesTheDatasetUnderThemAndShowPrintsThem() throws {
        let directory = try TemporaryDirectory()
        let server = try builtProduct("ostore-server").path
        let data = ["--data", directory.path("data")]
        #expect(try run(server, ["dataset", "create", "family"] + data).status == 0)
        do {
            let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")), folds: false)
            try storage.recordDefinition(try Self.definition(), version: SchemaVersion(1, 1), dataset: "family")
        }
        let unset = try run(server, ["rules", "show", "--dataset", "family"] + data)
        #expect(unset.status == 0 && String(decoding: unset.output, as: UTF8.self).contains("has no scope rules"))

        let broken = Self.fitting.replacingOccurrences(of: #""where": "name""#, with: #""where": "title""#)
        try broken.write(toFile: directory.path("broken.json"), atomically: true, encoding: .utf8)
        let refused = try run(server, ["rules", "set", "--dataset", "family", directory.path("broken.json")] + data)
        #expect(refused.status == 1)
        #expect(
            String(decoding: refused.error, as: UTF8.self).contains(
                "ostore-server rules set: \(directory.path("broken.json")) does not fit dataset family's schema 1.1.0"))
        try #"{"tables": []}"#.write(toFile: directory.path("form.json"), atomically: true, encoding: .utf8)
        #expect(
            try run(server, ["rules", "set", "--dataset", "family", directory.path("form.json")] + data).status == 1)
        #expect(
            String(decoding: try run(server, ["rules", "show", "--dataset", "family"] + data).output, as: UTF8.self)
                .contains("has no scope rules"))

        try Self.fitting.write(toFile: directory.path("rules.json"), atomically: true, encoding: .utf8)
        let set = try run(server, ["rules", "set", "--dataset", "family", directory.path("rules.json")] + data)
        #expect(set.status == 0, "\(String(decoding: set.error, as: UTF8.self))")
        #expect(String(decoding: set.output, as: UTF8.self).contains("(version 1)"))
        let shown = try run(server, ["rules", "show", "--dataset", "family"] + data)
        #expect(String(decoding: shown.output, as: UTF8.self) == Self.fitting + "\n")
        #expect(String(decoding: shown.error, as: UTF8.self).hasPrefix("version 1, set "))
    }
}
