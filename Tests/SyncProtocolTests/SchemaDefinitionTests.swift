import Foundation
import SyncProtocol
import Testing

/// One case of `Protocol/vectors/schema/`: a definition, its canonical text and its fingerprint.
struct SchemaVector: Decodable, Sendable, CustomTestStringConvertible {
    var name: String
    var definition: SchemaDefinition
    var canonicalText: String
    var fingerprint: String

    var testDescription: String { name }

    static let folder = ProtocolFiles.vectorsFolder.appendingPathComponent("schema")

    static let all: [SchemaVector] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().compactMap { name in
            try? JSONDecoder().decode(SchemaVector.self, from: Data(contentsOf: folder.appendingPathComponent(name)))
        }
    }()
}

/// The canonical text and fingerprint of a schema definition (Protocol/README.md, section 5.1),
/// the checks of a definition a hello carries, and the rules of a change against it.
@Suite("Schema definitions")
struct SchemaDefinitionTests {
    @Test func everySchemaVectorIsRead() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: SchemaVector.folder.path)
            .filter { $0.hasSuffix(".json") }
        #expect(files.count >= 9)
        #expect(SchemaVector.all.count == files.count)
        #expect(
            Set(SchemaVector.all.map(\.name)).isSuperset(of: ["reminders-1.0.0", "reminders-1.1.0", "reminders-2.0.0"]))
    }

    @Test(arguments: SchemaVector.all)
    func theCanonicalTextAndFingerprintAreTheVectors(_ vector: SchemaVector) {
        #expect(vector.definition.canonicalText == vector.canonicalText)
        #expect(vector.definition.fingerprint == vector.fingerprint)
        #expect(vector.definition.problem(maximumIdentifierLength: 128) == nil)
    }

    /// The definition survives the wire: encoded and decoded again, it has the same fingerprint.
    @Test(arguments: SchemaVector.all)
    func aDefinitionReadBackKeepsItsFingerprint(_ vector: SchemaVector) throws {
        let again = try ProtocolJSON.decode(
            SchemaDefinition.self, from: try ProtocolJSON.encode(vector.definition), limits: .standard)
        #expect(again == vector.definition)
        #expect(again.fingerprint == vector.fingerprint)
    }

    /// The order of tables, columns and foreign keys in the message is not part of the text.
    @Test func theOrderSentDoesNotMatter() throws {
        let vector = try #require(SchemaVector.all.first { $0.name == "edge.foreign-keys" })
        var shuffled = vector.definition
        shuffled.tables.reverse()
        for index in shuffled.tables.indices {
            shuffled.tables[index].columns.reverse()
            shuffled.tables[index].foreignKeys.reverse()
        }
        #expect(shuffled.fingerprint == vector.fingerprint)
    }

    /// Every field of the text counts: a change of any one changes the fingerprint.
    @Test func everyFieldChangesTheFingerprint() throws {
        let base = try #require(SchemaVector.all.first { $0.name == "reminders-1.1.0" }).definition
        let edits: [(String, (inout SchemaDefinition) -> Void)] = [
            ("strict", { $0.tables[0].isStrict.toggle() }),
            ("without rowid", { $0.tables[0].isWithoutRowID.toggle() }),
            ("type", { $0.tables[0].columns[1].type = "BLOB" }),
            ("not null", { $0.tables[0].columns[3].isNotNull.toggle() }),
            ("default", { $0.tables[0].columns[4].defaultValue = .value(.integer(1)) }),
            ("default kind", { $0.tables[0].columns[4].defaultValue = .expression("0") }),
            (
                "key position",
                {
                    $0.tables[2].columns[1].primaryKeyPosition = 1
                    $0.tables[2].columns[0].primaryKeyPosition = 2
                }
            ),
            ("name case", { $0.tables[0].columns[1].name = "Title" }),
            ("foreign key action", { $0.tables[2].foreignKeys[0].onUpdate = .cascade }),
            ("negative zero", { $0.tables[0].columns[4].defaultValue = .value(.real(0)) }),
        ]
        var seen: Set<String> = [base.fingerprint]
        for (name, edit) in edits {
            var edited = base
            edit(&edited)
            #expect(seen.insert(edited.fingerprint).inserted, "\(name)")
        }
        var zero = base
        zero.tables[0].columns[4].defaultValue = .value(.real(-0.0))
        #expect(seen.insert(zero.fingerprint).inserted, "-0.0 and 0.0 are different defaults")
    }

    @Test func definitionsThatDescribeNoSchemaAreRefused() {
        let good = SchemaDefinition.Column(name: "id", type: "TEXT", isNotNull: true, primaryKeyPosition: 1)
        let cases: [(String, SchemaDefinition)] = [
            ("odd table name", .init(tables: [.init(name: "two words", columns: [good])])),
            ("odd column name", .init(tables: [.init(name: "t", columns: [good, .init(name: "a;b", type: "")])])),
            (
                "tables in two cases",
                .init(tables: [.init(name: "t", columns: [good]), .init(name: "T", columns: [good])])
            ),
            ("columns in two cases", .init(tables: [.init(name: "t", columns: [good, .init(name: "ID", type: "")])])),
            ("no key", .init(tables: [.init(name: "t", columns: [.init(name: "id", type: "TEXT")])])),
            (
                "key positions with a gap",
                .init(tables: [
                    .init(name: "t", columns: [good, .init(name: "b", type: "TEXT", primaryKeyPosition: 3)])
                ])
            ),
            ("no columns", .init(tables: [.init(name: "t", columns: [])])),
            (
                "foreign key of an unknown column",
                .init(tables: [
                    .init(
                        name: "t", columns: [good],
                        foreignKeys: [.init(columns: ["x"], parentTable: "p", parentColumns: ["id"])])
                ])
            ),
            (
                "foreign key of unequal sides",
                .init(tables: [
                    .init(
                        name: "t", columns: [good],
                        foreignKeys: [.init(columns: ["id"], parentTable: "p", parentColumns: ["a", "b"])])
                ])
            ),
        ]
        for (name, definition) in cases {
            #expect(definition.problem(maximumIdentifierLength: 128) != nil, "\(name)")
        }
        #expect(
            SchemaDefinition(tables: [.init(name: "t", columns: [good])]).problem(maximumIdentifierLength: 128) == nil)
    }

    @Test func aFingerprintThatIsNotTheDefinitionsDigestIsRefused() throws {
        let definition = try #require(SchemaVector.all.first { $0.name == "reminders-1.1.0" }).definition
        var schema = SchemaDescription(
            version: SchemaVersion(1, 1), fingerprint: definition.fingerprint, tables: [:], definition: definition)
        #expect(schema.definitionProblem(limits: .standard) == nil)
        schema.fingerprint = String(repeating: "0", count: 64)
        #expect(schema.definitionProblem(limits: .standard)?.contains("SHA-256") == true)
        schema.definition = nil
        #expect(schema.definitionProblem(limits: .standard) == nil)
    }

    /// A hello's `definition` is optional: a message without it reads as before.
    @Test func aHelloWithoutADefinitionStillReads() throws {
        let hello = try ProtocolJSON.decode(
            HelloRequest.self, from: try ProtocolFiles.data("vectors/hello-request.basic.json"), limits: .standard)
        #expect(hello.schema.definition == nil)
    }

    /// Section 7.3: the Reminders sample's 1.1.0 is a minor step from its 1.0.0; each way of
    /// loosening or dropping what 1.0.0 declares is not, and a step backwards is not either.
    @Test func aMinorStepKeepsWhatTheOlderDefinitionDeclares() throws {
        let older = try #require(SchemaVector.all.first { $0.name == "reminders-1.0.0" }).definition
        let newer = try #require(SchemaVector.all.first { $0.name == "reminders-1.1.0" }).definition
        #expect(newer.minorStepProblem(from: older) == nil)
        #expect(newer.minorStepProblem(from: newer) == nil)
        #expect(older.minorStepProblem(from: newer)?.contains("left out") == true)
        func changed(_ change: (inout SchemaDefinition.Table) -> Void) -> SchemaDefinition {
            var definition = newer
            let place = definition.tables.firstIndex { $0.name == "reminders" }!
            change(&definition.tables[place])
            return definition
        }
        func column(_ name: String, in table: SchemaDefinition.Table) -> Int {
            table.columns.firstIndex { $0.name == name }!
        }
        let cases: [(String, SchemaDefinition)] = [
            ("NOT NULL dropped", changed { $0.columns[column("title", in: $0)].isNotNull = false }),
            ("NOT NULL added", changed { $0.columns[column("dueDate", in: $0)].isNotNull = true }),
            ("another type", changed { $0.columns[column("isDone", in: $0)].type = "TEXT" }),
            ("a column left out", changed { $0.columns.remove(at: column("listID", in: $0)) }),
            ("another key", changed { $0.columns[column("title", in: $0)].primaryKeyPosition = 2 }),
            ("STRICT dropped", changed { $0.isStrict = false }),
            ("WITHOUT ROWID added", changed { $0.isWithoutRowID = true }),
            (
                "a NOT NULL column added without a default",
                changed { $0.columns.append(.init(name: "colour", type: "TEXT", isNotNull: true)) }
            ),
        ]
        for (name, definition) in cases {
            #expect(definition.minorStepProblem(from: older) != nil, "\(name)")
        }
        var respelled = newer
        respelled.tables[0].name = respelled.tables[0].name.uppercased()
        respelled.tables[0].columns[0].type = respelled.tables[0].columns[0].type.lowercased()
        #expect(respelled.minorStepProblem(from: older) == nil)
        let added = changed {
            $0.columns.append(.init(name: "colour", type: "TEXT", isNotNull: true, defaultValue: .value(.text(""))))
            $0.columns.append(.init(name: "size", type: "INTEGER"))
        }
        #expect(added.minorStepProblem(from: older) == nil)
    }
}
