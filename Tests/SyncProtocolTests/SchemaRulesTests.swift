import Foundation
import SyncProtocol
import Testing

/// ``SchemaRules``: what a server refuses of a change pushed under a version with a definition,
/// on the Reminders sample's schema 1.1.0 (its vector).
@Suite("Schema rules of changes")
struct SchemaRulesTests {
    static let site = SiteID(bytes: Data(repeating: 7, count: 16))!

    static func rules() throws -> SchemaRules {
        let vector = try #require(SchemaVector.all.first { $0.name == "reminders-1.1.0" })
        return SchemaRules(vector.definition, version: SchemaVersion(1, 1))
    }

    static func change(
        _ op: Change.Operation, _ columns: [String: WireValue], table: String = "reminders",
        key: [String: WireValue] = ["id": .text("r1")]
    ) -> Change {
        Change(
            table: table, key: key, op: op, columns: columns, clock: ChangeClock(validMilliseconds: 1, counter: 0),
            site: site, seq: 1)
    }

    static let fullInsert: [String: WireValue] = [
        "id": .text("r1"), "title": .text("Milk"), "listID": .text("l1"), "isDone": .integer(0), "notes": .text(""),
    ]

    @Test func changesEveryClientAppliesPass() throws {
        let rules = try Self.rules()
        let passing: [(String, Change)] = [
            ("a full insert", Self.change(.insert, Self.fullInsert)),
            (
                "an insert leaving out columns with defaults",
                Self.change(.insert, ["title": .text("t"), "listID": .text("l")])
            ),
            ("an update", Self.change(.update, ["notes": .text("n"), "priority": .null])),
            (
                "names in another case",
                Self.change(.update, ["Title": .text("x")], table: "REMINDERS", key: ["ID": .text("r1")])
            ),
            ("a delete", Self.change(.delete, [:])),
            (
                "a composite key",
                Self.change(.delete, [:], table: "reminderTags", key: ["tagID": .text("t"), "reminderID": .text("r")])
            ),
        ]
        for (name, change) in passing {
            #expect(rules.problem(in: change) == nil, "\(name)")
        }
    }

    @Test func changesAClientRefusesAreRefusedNamingTableColumnAndRule() throws {
        let rules = try Self.rules()
        let refused: [(Change, String)] = [
            (Self.change(.update, ["notes": .null]), "column reminders.notes is NOT NULL"),
            (Self.change(.insert, ["listID": .text("l")]), "leaves out column reminders.title"),
            (
                Self.change(.update, ["priority": .text("high")]),
                "column reminders.priority is INTEGER in a STRICT table"
            ),
            (Self.change(.update, ["colour": .text("red")]), "column colour is not a column of table reminders"),
            (Self.change(.delete, [:], table: "lists"), "table lists is not a table of schema 1.1.0"),
            (Self.change(.delete, [:], key: ["uuid": .text("r1")]), "is keyed by [\"id\"]"),
            (Self.change(.delete, [:], table: "reminderTags", key: ["tagID": .text("t")]), "is keyed by"),
            (Self.change(.delete, [:], key: ["id": .blob(Data([1]))]), "column reminders.id is TEXT in a STRICT table"),
        ]
        for (change, reason) in refused {
            let problem = rules.problem(in: change)
            #expect(problem?.code == .schemaViolation, "\(reason)")
            #expect(problem?.message.contains(reason) == true, "\(problem?.message ?? "nil") does not say \(reason)")
        }
    }

    /// One rule, one place: the client's apply takes the same classes (``StrictColumnRule``).
    @Test func aStrictColumnTakesItsClassesAndNull() {
        #expect(StrictColumnRule.accepted(byDeclaredType: "REAL") == [.null, .integer, .real])
        #expect(StrictColumnRule.accepted(byDeclaredType: "int") == [.null, .integer])
        #expect(StrictColumnRule.accepted(byDeclaredType: "TEXT") == [.null, .text])
        #expect(StrictColumnRule.accepted(byDeclaredType: "BLOB") == [.null, .blob])
        #expect(StrictColumnRule.accepted(byDeclaredType: "ANY") == .all)
    }

    /// A version without a definition is checked by the nearest of its major: the lowest above it
    /// with every rule, else the highest below it for what it declares; another major's never.
    @Test func theGoverningRulesOfAVersionWithoutADefinition() throws {
        let definition = try #require(SchemaVector.all.first { $0.name == "reminders-1.1.0" }).definition
        let recorded = [
            SchemaVersion(1, 1): SchemaRules(definition, version: SchemaVersion(1, 1)),
            SchemaVersion(1, 3): SchemaRules(definition, version: SchemaVersion(1, 3)),
            SchemaVersion(2, 0): SchemaRules(definition, version: SchemaVersion(2, 0)),
        ]
        let own = try #require(SchemaRules.governing(SchemaVersion(1, 1), among: recorded))
        #expect(own.version == SchemaVersion(1, 1) && !own.passesUndeclaredNames)
        let between = try #require(SchemaRules.governing(SchemaVersion(1, 2, 7), among: recorded))
        #expect(between.version == SchemaVersion(1, 3) && !between.passesUndeclaredNames)
        let older = try #require(SchemaRules.governing(SchemaVersion(1, 0), among: recorded))
        #expect(older.version == SchemaVersion(1, 1) && !older.passesUndeclaredNames)
        let newer = try #require(SchemaRules.governing(SchemaVersion(1, 9), among: recorded))
        #expect(newer.version == SchemaVersion(1, 3) && newer.passesUndeclaredNames)
        #expect(SchemaRules.governing(SchemaVersion(3, 0), among: recorded) == nil)
        #expect(SchemaRules.governing(SchemaVersion(1, 0), among: [:]) == nil)
    }

    /// Rules for a newer minor pass the tables and columns they do not declare, and hold every
    /// rule for those they do.
    @Test func rulesForANewerMinorCheckWhatTheyDeclare() throws {
        let rules = try Self.rules().forNewerMinorVersion()
        #expect(rules.problem(in: Self.change(.insert, ["name": .text("x")], table: "labels")) == nil)
        #expect(rules.problem(in: Self.change(.update, ["colour": .text("red")])) == nil)
        #expect(rules.problem(in: Self.change(.update, ["notes": .null]))?.code == .schemaViolation)
        #expect(rules.problem(in: Self.change(.update, ["priority": .text("high")]))?.code == .schemaViolation)
        #expect(
            rules.problem(in: Self.change(.insert, ["id": .text("r1"), "colour": .text("red")]))?.code
                == .schemaViolation)
        #expect(rules.problem(in: Self.change(.delete, [:], key: ["title": .text("t")]))?.code == .schemaViolation)
        #expect(try Self.rules().problem(in: Self.change(.update, ["colour": .text("red")]))?.code == .schemaViolation)
    }
}
