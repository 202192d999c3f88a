import Foundation
import SyncProtocol
import TestSupport
import Testing

/// ``ScopeRules``: reading a rules file, checking it against a schema, and the buckets
/// ``ScopeEvaluator`` decides scopes with, against an oracle that reads the rules' meaning from
/// the rows themselves.
@Suite("Scope rules")
struct ScopeRulesTests {
    static let definition = SharedListsSchema.definition

    static let rulesFile = """
        {
          "$schema": "https://offlinestore.invalid/protocol/v1/scope-rules.json",
          "tables": {
            "lists": {
              "read": [
                {"column": "ownerID", "equals": "subject"},
                {"column": "id", "in": {"table": "listMembers", "select": "listID", "where": "userID"}}
              ],
              "write": [{"column": "ownerID", "equals": "subject"}]
            },
            "listMembers": {
              "read": [{"parent": "lists"}],
              "write": [{"parent": "lists"}]
            },
            "reminders": {
              "read": [{"parent": "lists", "columns": ["listID"]}],
              "write": [
                {"parent": "lists"},
                {"column": "listID", "in": {"table": "listMembers", "select": "listID", "where": "userID"}}
              ],
              "writableColumns": ["title", "isDone", "listID"]
            },
            "notices": {"read": [{"column": "team", "equals": {"claim": "team"}}]},
            "tags": {"read": ["everyone"]}
          }
        }
        """

    static func rules() throws -> ScopeRules { try ScopeRules.read(from: Data(rulesFile.utf8)) }

    static let membership = ScopeRules.Membership(table: "listMembers", selectColumn: "listID", whereColumn: "userID")

    @Test func aRulesFileReadsIntoItsFilters() throws {
        let rules = try Self.rules()
        #expect(rules.tables.count == 5)
        #expect(
            rules.tables["lists"]
                == .init(
                    read: [.equals(column: "ownerID", to: .subject), .member(column: "id", of: Self.membership)],
                    write: [.equals(column: "ownerID", to: .subject)]))
        #expect(rules.tables["reminders"]?.read == [.parent(table: "lists", columns: ["listID"])])
        #expect(rules.tables["reminders"]?.writableColumns == ["title", "isDone", "listID"])
        #expect(rules.tables["notices"]?.read == [.equals(column: "team", to: .claim("team"))])
        #expect(rules.tables["notices"]?.write == [])
        #expect(rules.tables["tags"]?.read == [.everyone])
        #expect(rules.problems(against: Self.definition) == [])
    }

    static func refusal(_ json: String) -> String? {
        do {
            _ = try ScopeRules.read(from: Data(json.utf8))
            return nil
        } catch {
            return error.description
        }
    }

    @Test func aFileOfAnotherFormIsRefusedNamingTheMember() {
        let cases: [(String, String)] = [
            ("[]", "the file is not a JSON object"),
            (#"{"tables": {}, "tabels": 1}"#, #"unknown member "tabels""#),
            (#"{"rules": {}}"#, #"unknown member "rules" (allowed: $schema, tables)"#),
            ("{}", "tables: missing"),
            (#"{"tables": {"t": {"write": []}}}"#, "tables.t.read: missing"),
            (#"{"tables": {"t": {"read": []}}}"#, "tables.t.read: empty"),
            (
                #"{"tables": {"t": {"read": ["all"]}}}"#,
                #"tables.t.read[0]: the only filter given as a string is "everyone""#
            ),
            (
                #"{"tables": {"t": {"read": [{"column": "a"}]}}}"#,
                "tables.t.read[0]: a filter on column a needs equals or in"
            ),
            (#"{"tables": {"t": {"read": [{"column": "a", "equals": "owner"}]}}}"#, "tables.t.read[0].equals: must be"),
            (
                #"{"tables": {"t": {"read": [{"column": "a", "equals": "subject", "in": {}}]}}}"#,
                #"tables.t.read[0]: unknown member "in""#
            ),
            (
                #"{"tables": {"t": {"read": [{"column": "a", "in": {"table": "m", "select": "x"}}]}}}"#,
                "tables.t.read[0].in.where: must be a table or column name"
            ),
            (
                #"{"tables": {"t": {"read": ["everyone", "everyone"]}}}"#,
                "tables.t.read[1]: the same filter is given twice"
            ),
            (
                #"{"tables": {"t": {"read": ["everyone"], "writableColumns": ["a", "a"]}}}"#,
                "tables.t.writableColumns[1]: a is named twice"
            ),
            (
                #"{"tables": {"t": {"read": [{"parent": ""}]}}}"#,
                "tables.t.read[0].parent: must be a table or column name"
            ),
            (#"{"tables": {"t": {"read": ["everyone"]}}, "tables": {}}"#, "not strict JSON"),
            (#"{"tables":{"t":{"read":[{"column":"a","in":{"table":{"a":{"b":{"c":[]}}}}}]}}}"#, "not strict JSON"),
        ]
        for (json, expected) in cases {
            let refusal = Self.refusal(json)
            #expect(refusal?.contains(expected) == true, "\(json): \(refusal ?? "read")")
        }
        #expect(
            Self.refusal(String(repeating: " ", count: ScopeRules.maximumFileBytes) + "{}")?.contains("larger") == true)
    }

    static func problems(_ edit: (inout ScopeRules) -> Void) throws -> [String] {
        var rules = try Self.rules()
        edit(&rules)
        return rules.problems(against: Self.definition).map(\.description)
    }

    @Test func rulesThatDoNotFitTheSchemaAreRefusedNamingTheRuleAndTheColumn() throws {
        let cases: [(String, (inout ScopeRules) -> Void, String)] = [
            (
                "a table spelled in another case",
                { $0.tables["Tags"] = $0.tables.removeValue(forKey: "tags") },
                "tables.Tags: the schema spells the table tags, not Tags"
            ),
            (
                "a table of no schema", { $0.tables["notes"] = .init(read: [.everyone]) },
                "tables.notes: the schema has no table notes"
            ),
            ("a synced table left out", { $0.tables["tags"] = nil }, "the schema's table tags has no rules"),
            (
                "a column the table lacks",
                { $0.tables["lists"]!.read[0] = .equals(column: "owner", to: .subject) },
                "tables.lists.read[0].column: the schema has no column owner in lists"
            ),
            (
                "a subject compared with an integer",
                { $0.tables["lists"]!.read[0] = .equals(column: "position", to: .subject) },
                "tables.lists.read[0]: column position of lists is declared INTEGER"
            ),
            (
                "a membership of a table the schema lacks",
                {
                    $0.tables["lists"]!.read[1] = .member(
                        column: "id", of: .init(table: "members", selectColumn: "listID", whereColumn: "userID"))
                },
                "tables.lists.read[1].in.table: the schema has no table members"
            ),
            (
                "a membership whose values are of another affinity",
                {
                    $0.tables["lists"]!.read[1] = .member(
                        column: "position",
                        of: .init(table: "listMembers", selectColumn: "listID", whereColumn: "userID"))
                },
                "tables.lists.read[1]: column position of lists is declared INTEGER but listMembers.listID is TEXT"
            ),
            (
                "a parent without a foreign key to it",
                { $0.tables["lists"]!.read.append(.parent(table: "tags", columns: [])) },
                "tables.lists.read[2].parent: lists has no foreign key to tags"
            ),
            (
                "a parent through columns of no foreign key",
                { $0.tables["reminders"]!.read[0] = .parent(table: "lists", columns: ["title"]) },
                "tables.reminders.read[0].parent: reminders has no foreign key (title) to lists"
            ),
            (
                "a parent the table does not reference",
                { $0.tables["lists"]!.write.append(.parent(table: "listMembers", columns: [])) },
                "tables.lists.write[1].parent: lists has no foreign key to listMembers"
            ),
            (
                "a key column as writable",
                { $0.tables["reminders"]!.writableColumns = ["id", "title"] },
                "tables.reminders.writableColumns[0]: id is a key column"
            ),
            (
                "a writable column the table lacks",
                { $0.tables["reminders"]!.writableColumns = ["title", "done"] },
                "tables.reminders.writableColumns[1]: the schema has no column done in reminders"
            ),
        ]
        for (what, edit, expected) in cases {
            let problems = try Self.problems(edit)
            #expect(problems.contains { $0.contains(expected) }, "\(what): \(problems)")
        }
    }

    @Test func parentFiltersInACircleAreRefused() throws {
        var definition = Self.definition
        let lists = definition.tables.firstIndex { $0.name == "lists" }!
        definition.tables[lists].columns.append(.init(name: "templateID", type: "TEXT"))
        definition.tables[lists].foreignKeys = [
            .init(columns: ["templateID"], parentTable: "reminders", parentColumns: ["id"])
        ]
        var rules = try Self.rules()
        rules.tables["lists"]!.read.append(.parent(table: "reminders", columns: []))
        let problems = rules.problems(against: definition).map(\.description)
        #expect(
            problems == [
                "tables: the read parent filters go round in a circle (lists → reminders → lists): a row's scope must end at a filter that is not a parent's"
            ])
        #expect(throws: ScopeRulesRefused.self) { try ScopeEvaluator(rules, definition: definition) }
    }

    @Test func aForeignKeyToAnotherThanTheParentsKeyIsRefused() throws {
        var definition = Self.definition
        let reminders = definition.tables.firstIndex { $0.name == "reminders" }!
        definition.tables[reminders].foreignKeys = [
            .init(columns: ["listID"], parentTable: "lists", parentColumns: ["name"])
        ]
        let problems = try Self.rules().problems(against: definition).map(\.description)
        #expect(problems.contains { $0.contains("references lists(name), not its primary key (id)") }, "\(problems)")
    }

    /// The examples of Protocol/README.md, section 17, and of the guide read and fit the schema they
    /// are written for.
    @Test(arguments: [
        ("Protocol/README.md", "## 17. Scope rules"),
        ("docs/scoped-sync.md", "## Rules: who reads and writes which rows"),
    ])
    func theDocumentsExampleFitsItsSchema(file: String, heading: String) throws {
        let text = try String(contentsOf: DocumentedCode.packageRoot.appendingPathComponent(file), encoding: .utf8)
        let section = try #require(text.range(of: heading))
        let rest = text[section.upperBound...]
        let start = try #require(rest.range(of: "```json\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        let rules = try ScopeRules.read(from: Data(rest[start.upperBound..<end.lowerBound].utf8))
        var definition = Self.definition
        definition.tables.removeAll { $0.name == "notices" }
        #expect(rules.problems(against: definition) == [])
    }

    /// The file's JSON Schema lists exactly the members the reader reads.
    @Test func theSchemaOfTheRulesFileListsWhatTheServerReads() throws {
        let url = DocumentedCode.packageRoot.appendingPathComponent("Protocol/schemas/scope-rules.json")
        let schema = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let definitions = try #require(schema["$defs"] as? [String: Any])
        func members(_ object: Any?) -> Set<String> {
            Set(((object as? [String: Any])?["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
        }
        #expect(members(schema) == ["$schema", "tables"])
        #expect(members(definitions["table"]) == ["read", "write", "writableColumns"])
        let filters = try #require((definitions["filter"] as? [String: Any])?["oneOf"] as? [Any])
        #expect(
            Set(filters.map { members($0) })
                == [[], ["column", "equals"], ["column", "in"], ["parent", "columns"]])
        let membership = (((filters[2] as? [String: Any])?["properties"] as? [String: Any])?["in"])
        #expect(members(membership) == ["table", "select", "where", "equals"])
        #expect(
            (schema["properties"] as? [String: Any]).flatMap {
                ($0["tables"] as? [String: Any])?["maxProperties"] as? Int
            } == ScopeRules.maximumTables)
        #expect(((definitions["filters"] as? [String: Any])?["maxItems"] as? Int) == ScopeRules.maximumFilters)
    }

    /// Rows of a dataset, by table, each a row's column values.
    typealias Dataset = [String: [[String: WireValue]]]

    /// What the rules mean, read from the rows themselves: whether `subject` may `access` `row` of
    /// `table`.
    static func oracle(
        _ rules: ScopeRules, _ dataset: Dataset, _ access: ScopeRules.Access, table: String, row: [String: WireValue],
        identity: ScopeIdentity
    ) -> Bool {
        guard identity.subject != nil else { return false }
        func same(_ left: WireValue?, _ right: WireValue?) -> Bool {
            switch (left, right) {
            case (.integer(let a)?, .real(let b)?), (.real(let b)?, .integer(let a)?): Double(a) == b
            case (let a?, let b?): a != .null && a == b
            default: false
            }
        }
        return rules.tables[table]!.filters(access).contains { filter in
            switch filter {
            case .everyone:
                return true
            case .equals(let column, let value):
                return identity.text(of: value).map { same(row[column], .text($0)) } ?? false
            case .member(let column, let membership):
                guard let member = identity.text(of: membership.equals) else { return false }
                return dataset[membership.table, default: []].contains { candidate in
                    same(candidate[membership.whereColumn], .text(member))
                        && same(candidate[membership.selectColumn], row[column])
                }
            case .parent(let parent, let columns):
                let foreignKey = Self.definition.tables.first { $0.name == table }!.foreignKeys.first {
                    $0.parentTable == parent && (columns.isEmpty || $0.columns == columns)
                }!
                return dataset[parent, default: []].contains { candidate in
                    zip(foreignKey.columns, foreignKey.parentColumns).allSatisfy { same(row[$0], candidate[$1]) }
                        && oracle(rules, dataset, access, table: parent, row: candidate, identity: identity)
                }
            }
        }
    }

    /// Whether the evaluator's buckets put `row` in `identity`'s scope.
    static func evaluated(
        _ evaluator: ScopeEvaluator, _ dataset: Dataset, _ access: ScopeRules.Access, table: String,
        row: [String: WireValue], identity: ScopeIdentity
    ) -> Bool {
        let granted = evaluator.grantedBuckets(access, to: identity) { membership, member in
            dataset[membership.table, default: []].filter { $0[membership.whereColumn] == .text(member) }
                .compactMap { $0[membership.selectColumn] }
        }
        return !buckets(evaluator, dataset, access, table: table, row: row).isDisjoint(with: granted)
    }

    static func buckets(
        _ evaluator: ScopeEvaluator, _ dataset: Dataset, _ access: ScopeRules.Access, table: String,
        row: [String: WireValue]
    ) -> Set<ScopeBucket> {
        evaluator.buckets(
            access, of: table, values: { row[$0] },
            parentBuckets: { parent, key in
                let keyColumns = Self.definition.tables.first { $0.name == parent }!.columns.filter {
                    $0.primaryKeyPosition > 0
                }
                guard
                    let parentRow = dataset[parent, default: []].first(where: { candidate in
                        keyColumns.allSatisfy { candidate[$0.name] == key[$0.name] }
                    })
                else { return nil }
                return buckets(evaluator, dataset, access, table: parent, row: parentRow)
            })
    }

    /// Random datasets of a few users, lists, memberships, reminders (some of lists that do not
    /// exist), notices and tags: for every subject, table and row, the buckets decide as the
    /// oracle does.
    @Test(arguments: 0..<40) func bucketsDecideScopesAsTheRulesSay(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let users = ["alice", "bob", "carol", "dave"]
        let teams = ["blue", "red"]
        var dataset: Dataset = [:]
        let listCount = 1 + random.next(below: 5)
        for list in 0..<listCount {
            dataset["lists", default: []].append([
                "id": .text("l\(list)"),
                "ownerID": random.next(below: 6) == 0 ? .null : .text(users[random.next(below: users.count)]),
                "name": .text("list \(list)"), "position": .integer(Int64(list)),
            ])
            for user in users where random.next(below: 3) == 0 {
                dataset["listMembers", default: []].append(["listID": .text("l\(list)"), "userID": .text(user)])
            }
        }
        for reminder in 0..<random.next(below: 12) {
            dataset["reminders", default: []].append([
                "id": .text("r\(reminder)"), "listID": .text("l\(random.next(below: listCount + 1))"),
                "title": .text("t"), "isDone": .integer(0),
            ])
        }
        for notice in 0..<4 {
            dataset["notices", default: []].append(["id": .integer(Int64(notice)), "team": .text(teams[notice % 2])])
        }
        dataset["tags"] = [["name": .text("home")]]
        let rules = try Self.rules()
        let evaluator = try ScopeEvaluator(rules, definition: Self.definition)
        let identities =
            users.map { ScopeIdentity(subject: $0, claims: ["team": teams[random.next(below: 2)]]) }
            + [ScopeIdentity(subject: nil, claims: ["team": "blue"])]
        for identity in identities {
            for access in ScopeRules.Access.allCases {
                for (table, rows) in dataset {
                    for row in rows {
                        #expect(
                            Self.evaluated(evaluator, dataset, access, table: table, row: row, identity: identity)
                                == Self.oracle(rules, dataset, access, table: table, row: row, identity: identity),
                            "\(identity.subject ?? "no subject") \(access) \(table) \(row)")
                    }
                }
            }
        }
    }

    @Test func valuesSQLiteFindsEqualShareABucket() {
        #expect(ScopeBucket.valueText(.integer(7)) == ScopeBucket.valueText(.real(7)))
        #expect(ScopeBucket.valueText(.integer(7)) != ScopeBucket.valueText(.text("7")))
        #expect(ScopeBucket.valueText(.real(7.5)) == "real 7.5")
        #expect(ScopeBucket.valueText(.null) == nil)
    }
}

extension SeededGenerator {
    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
