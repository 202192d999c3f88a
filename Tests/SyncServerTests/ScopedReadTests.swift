import Foundation
import OfflineStoreSQLite
import SyncProtocol
import TestSupport
import Testing

@testable import SyncServer

/// Reads of a subject's scope from the scope index the fold keeps (``ScopeTransition``,
/// ``StateScopeIndex``): devices of several subjects pull at random moments while one writer
/// pushes lists, memberships and reminders, moves reminders between lists, hands lists to other
/// owners and changes the rules; after every pull each device holds exactly the rows its subject
/// may read, with the dataset's values, as the rules decide them on the whole dataset.
@Suite("Scoped reads")
struct ScopedReadTests {
    static let definition = SharedListsSchema.definition

    static let shared = """
        {"tables": {
          "lists": {"read": [
            {"column": "ownerID", "equals": "subject"},
            {"column": "id", "in": {"table": "listMembers", "select": "listID", "where": "userID"}}
          ]},
          "listMembers": {"read": [{"parent": "lists"}, {"column": "userID", "equals": "subject"}]},
          "reminders": {"read": [{"parent": "lists"}]},
          "notices": {"read": [{"column": "team", "equals": {"claim": "team"}}]},
          "tags": {"read": ["everyone"]}
        }}
        """

    /// The same tables, each list its owner's alone.
    static let ownersOnly = """
        {"tables": {
          "lists": {"read": [{"column": "ownerID", "equals": "subject"}]},
          "listMembers": {"read": [{"parent": "lists"}]},
          "reminders": {"read": [{"parent": "lists"}]},
          "notices": {"read": [{"column": "team", "equals": {"claim": "team"}}]},
          "tags": {"read": ["everyone"]}
        }}
        """

    static let users = ["alice", "bob", "carol"]
    static let writer = SiteID(bytes: Data(repeating: 0xE1, count: 16))!

    /// The dataset as pushed: every row with its values (a deleted row's as they were when it was
    /// deleted).
    struct Model {
        var rows: [ScopedRow: (values: [String: WireValue], deleted: Bool)] = [:]
        var lists: [String] = []
        var reminders: [String] = []

        static func key(_ table: String, _ values: [String: WireValue]) -> [String: WireValue] {
            let columns = definition.tables.first { $0.name == table }!.columns.filter { $0.primaryKeyPosition > 0 }
            return Dictionary(uniqueKeysWithValues: columns.map { ($0.name, values[$0.name]!) })
        }

        static func row(_ table: String, _ key: [String: WireValue]) -> ScopedRow {
            var writer = CanonicalJSONWriter()
            _ = try? writer.write(key)
            return ScopedRow(table: table, key: writer.text)
        }

        /// What `identity` may read, decided by `evaluator` on every row.
        func readable(by identity: ScopeIdentity, _ evaluator: ScopeEvaluator) -> Set<ScopedRow> {
            let granted = evaluator.grantedBuckets(.read, to: identity) { membership, member in
                rows.compactMap { row, state in
                    row.table == membership.table && !state.deleted
                        && state.values[membership.whereColumn] == .text(member)
                        ? state.values[membership.selectColumn] : nil
                }
            }
            var memo: [ScopedRow: Bool] = [:]
            func readable(_ row: ScopedRow) -> Bool {
                if let known = memo[row] { return known }
                memo[row] = false
                guard let state = rows[row] else { return false }
                let links = evaluator.links(.read, of: row.table, values: { state.values[$0] })
                let found =
                    !links.buckets.isDisjoint(with: granted)
                    || links.parents.contains { readable(Self.row($0.table, $0.key)) }
                memo[row] = found
                return found
            }
            return Set(rows.keys.filter(readable))
        }
    }

    /// A device of one subject: the rows it holds, merged as a device merges them.
    struct Device {
        var identity: ScopeIdentity
        var rows: [ScopedRow: MergedRow] = [:]

        var cursor: ScopedCursor?
        /// Each table's depth by foreign keys: rows that leave come deepest first, and a first
        /// download's rows shallowest first.
        static let depths =
            (try? ScopeEvaluator(ScopeRules.read(from: Data(shared.utf8)), definition: SharedListsSchema.definition))?
            .depths ?? [:]

        /// Pulls every page of the scope's move, `limit` rows and changes a page.
        mutating func pull(_ storage: any ScopedStorage, limit: Int) throws {
            var page: ScopedChanges
            var removedDepths: [Int] = []
            var downloadedDepths: [Int] = []
            let downloads = cursor == nil
            repeat {
                page = try storage.readScopedChanges(
                    dataset: "family", identity: identity, after: cursor, limit: limit, excluding: nil)
                removedDepths += page.removed.map { Self.depths[$0.table] ?? -1 }
                if downloads { downloadedDepths += page.changes.map { Self.depths[$0.table] ?? -1 } }
                var rowsOfPage = Set(page.removed)
                for change in page.changes {
                    let key = try change.canonicalKeyJSON()
                    rows[ScopedRow(table: change.table, key: key), default: MergedRow()].merge(
                        FoldChange(change, key: key))
                    rowsOfPage.insert(ScopedRow(table: change.table, key: key))
                }
                // A row that comes in is its insert and updates: rows, not changes, fill a page.
                #expect(rowsOfPage.count <= limit)
                for row in page.removed { rows[row] = nil }
                cursor = page.cursor
            } while page.hasMore
            #expect(removedDepths == removedDepths.sorted(by: >), "children leave before their parents")
            #expect(downloadedDepths == downloadedDepths.sorted(), "parents come before their children")
        }
    }

    /// Whether `device` holds exactly what its subject may read, with the model's values.
    static func check(_ device: Device, _ model: Model, _ evaluator: ScopeEvaluator, _ context: String) {
        let readable = model.readable(by: device.identity, evaluator)
        #expect(
            Set(device.rows.keys) == readable,
            "\(context): \(device.identity.subject!) misses \(readable.subtracting(device.rows.keys).sorted()) and holds \(Set(device.rows.keys).subtracting(readable).sorted())"
        )
        for row in readable {
            guard let held = device.rows[row], let state = model.rows[row] else { continue }
            #expect(held.isDeleted == state.deleted, "\(context): \(row)")
            guard !state.deleted else { continue }
            for (name, value) in state.values where Model.key(row.table, state.values)[name] == nil {
                #expect(held.cells[name]?.value == value, "\(context): \(row).\(name)")
            }
        }
    }

    @Test(arguments: StorageBackend.allCases, 0..<16)
    func everyPullLeavesEachDeviceWithExactlyItsScope(_ backend: StorageBackend, seed: UInt64) throws {
        let directory = try TemporaryDirectory()
        let storage = try ScopedStorages.open(backend, in: directory)
        try storage.createDataset(named: "family")
        try storage.setScopeRules(Self.shared, definition: Self.definition, dataset: "family")
        var evaluator = try StoredScopeRules(
            version: 1, rulesText: Self.shared,
            definitionText: String(decoding: try JSONEncoder().encode(Self.definition), as: UTF8.self)
        ).evaluator
        var random = SeededGenerator(seed: seed)
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        var model = Model()
        var devices = Self.users.map { Device(identity: ScopeIdentity(subject: $0)) }
        #expect(Device.depths["lists"] == 0 && Device.depths["reminders"] == 1 && Device.depths["listMembers"] == 1)
        var seq: Int64 = 0
        var pending: [Change] = []
        func write(_ table: String, _ op: Change.Operation, _ values: [String: WireValue]) {
            let key = Model.key(table, values)
            let row = Model.row(table, key)
            seq += 1
            pending.append(
                Change(
                    table: table, key: key, op: op, columns: op == .delete ? [:] : values,
                    clock: ChangeClock(milliseconds: 1_764_000_000_000 + seq, counter: 0)!, site: Self.writer, seq: seq)
            )
            switch op {
            case .insert: model.rows[row] = (values, false)
            case .update: model.rows[row]!.values.merge(values) { $1 }
            case .delete: model.rows[row]!.deleted = true
            }
        }
        let rulesChangeAt = seed % 3 == 0 ? 40 + Int(random.next() % 40) : nil
        for step in 0..<120 {
            let live = { (table: String) in
                model.rows.filter { $0.key.table == table && !$0.value.deleted }.map(\.key).sorted()
            }
            switch random.next() % 10 {
            case 0, 1:
                let id = "l\(model.lists.count)"
                model.lists.append(id)
                write("lists", .insert, ["id": .text(id), "ownerID": .text(pick(Self.users)), "name": .text(id)])
            case 2:
                if let list = live("lists").randomElement(using: &random) {
                    write(
                        list.table, .update,
                        Model.key("lists", model.rows[list]!.values).merging(["ownerID": .text(pick(Self.users))]) {
                            $1
                        })
                }
            case 3, 4:
                if !model.lists.isEmpty {
                    let values: [String: WireValue] = [
                        "listID": .text(pick(model.lists)), "userID": .text(pick(Self.users)),
                    ]
                    let row = Model.row("listMembers", values)
                    // A key deleted is not inserted again (Protocol/README.md, section 8.5).
                    if model.rows[row] == nil {
                        write("listMembers", .insert, values)
                    }
                }
            case 5:
                if let member = live("listMembers").randomElement(using: &random) {
                    write("listMembers", .delete, model.rows[member]!.values)
                }
            case 6, 7:
                let id = "r\(model.reminders.count)"
                model.reminders.append(id)
                // Now and then a reminder of a list that does not exist (yet).
                let list = model.lists.isEmpty || chance(10) ? "l\(model.lists.count + 1)" : pick(model.lists)
                write("reminders", .insert, ["id": .text(id), "listID": .text(list), "title": .text("t\(step)")])
            case 8:
                if let reminder = live("reminders").randomElement(using: &random) {
                    let moves = chance(50) && !model.lists.isEmpty
                    write(
                        "reminders", .update,
                        ["id": model.rows[reminder]!.values["id"]!]
                            .merging(moves ? ["listID": .text(pick(model.lists))] : ["title": .text("e\(step)")]) { $1 }
                    )
                }
            default:
                if let reminder = live("reminders").randomElement(using: &random), chance(70) {
                    write("reminders", .delete, model.rows[reminder]!.values)
                } else if let list = live("lists").randomElement(using: &random) {
                    write("lists", .delete, model.rows[list]!.values)
                }
            }
            if !pending.isEmpty && chance(40) {
                _ = try storage.storeBatch(
                    pending, site: Self.writer, clientSchema: SchemaVersion(1, 0), dataset: "family")
                pending = []
            }
            if step == rulesChangeAt {
                if !pending.isEmpty {
                    _ = try storage.storeBatch(
                        pending, site: Self.writer, clientSchema: SchemaVersion(1, 0), dataset: "family")
                    pending = []
                }
                // Rules take effect at the fold after they are set: changes stored and not folded
                // yet are folded under them.
                storage.waitUntilFolded()
                try storage.setScopeRules(Self.ownersOnly, definition: Self.definition, dataset: "family")
                // A deleted row keeps only its key's values for rules set after its delete.
                for (row, state) in model.rows where state.deleted {
                    model.rows[row]!.values = Model.key(row.table, state.values)
                }
                storage.waitUntilFolded()
                evaluator = try StoredScopeRules(
                    version: 2, rulesText: Self.ownersOnly,
                    definitionText: String(decoding: try JSONEncoder().encode(Self.definition), as: UTF8.self)
                ).evaluator
            }
            if pending.isEmpty && chance(30) {
                let index = Int(random.next() % UInt64(devices.count))
                try devices[index].pull(storage, limit: 1 + Int(random.next() % 8))
                Self.check(devices[index], model, evaluator, "\(backend) seed \(seed) step \(step)")
            }
        }
        if !pending.isEmpty {
            _ = try storage.storeBatch(pending, site: Self.writer, clientSchema: SchemaVersion(1, 0), dataset: "family")
        }
        for index in devices.indices {
            try devices[index].pull(storage, limit: 1_000)
            Self.check(devices[index], model, evaluator, "\(backend) seed \(seed) at the end")
            // A device that downloads now receives the same.
            var fresh = Device(identity: devices[index].identity)
            try fresh.pull(storage, limit: 3)
            #expect(Set(fresh.rows.keys) == Set(devices[index].rows.keys))
        }
    }
}

extension ScopedReadTests {
    /// Regression: rules set twice with no change stored between them took the same position, and
    /// the fold could not record the second (every scoped pull and push then failed).
    @Test(arguments: StorageBackend.allCases)
    func rulesSetAgainWithNoChangeBetweenTakeEffectEachTime(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let storage = try ScopedStorages.open(backend, in: directory)
        try storage.createDataset(named: "family")
        try storage.setScopeRules(Self.shared, definition: Self.definition, dataset: "family")
        let clock = { (offset: Int64) in ChangeClock(milliseconds: 1_764_000_000_000 + offset, counter: 0)! }
        _ = try storage.storeBatch(
            [
                Change(
                    table: "lists", key: ["id": .text("l1")], op: .insert,
                    columns: ["id": .text("l1"), "ownerID": .text("alice"), "name": .text("Groceries")],
                    clock: clock(1), site: Self.writer, seq: 1),
                Change(
                    table: "listMembers", key: ["listID": .text("l1"), "userID": .text("bob")], op: .insert,
                    columns: ["listID": .text("l1"), "userID": .text("bob")], clock: clock(2), site: Self.writer,
                    seq: 2),
            ], site: Self.writer, clientSchema: SchemaVersion(1, 0), dataset: "family")
        var bob = Device(identity: ScopeIdentity(subject: "bob"))
        try bob.pull(storage, limit: 10)
        #expect(bob.rows.count == 2)
        for (rules, rows) in [(Self.ownersOnly, 0), (Self.shared, 2), (Self.ownersOnly, 0)] {
            storage.waitUntilFolded()
            try storage.setScopeRules(rules, definition: Self.definition, dataset: "family")
            storage.waitUntilFolded()
            try bob.pull(storage, limit: 10)
            #expect(bob.rows.count == rows)
        }
    }
}

/// Regression: without statistics of the scope index's tables, SQLite's planner took the range on
/// a link's `addedAt` for the walk's join and read every link of the dataset for each row the walk
/// reached (a first download of 1% of 100,000 rows took minutes).
@Suite("Scope index walks")
struct ScopeIndexWalkPlanTests {
    @Test func aWalkSeeksEachRowsChildrenByTheirTarget() throws {
        let directory = try TemporaryDirectory()
        let storage = try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data")))
        try storage.createDataset(named: "family")
        let sql = StateScopeIndexReader.reachedSQL(
            datasetID: 1, buckets: [ScopeBucket(kind: "subject", value: "text bob")], at: 10)
        let plan = try storage.state.pool.read { db in
            try db.fetchAll(SQL(sql: "EXPLAIN QUERY PLAN " + sql.text, arguments: sql.arguments)).map {
                try $0.decode(String.self, at: 3)
            }
        }
        let searches = plan.filter { $0.contains(" l ") }
        #expect(searches.count == 2, "\(plan)")
        #expect(searches.allSatisfy { $0.contains("SEARCH l USING INDEX state_scope_links_target") }, "\(plan)")
        #expect(plan.contains { $0.contains("kind=? AND a=? AND b=?") }, "\(plan)")
    }
}
