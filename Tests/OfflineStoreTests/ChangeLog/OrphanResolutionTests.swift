import Foundation
import OfflineStore
import SyncProtocol
import Testing

@testable import OfflineStoreChangeLog

/// Shelves keyed by two columns, items on them (a composite foreign key), a tree of nodes (a key
/// to its own table), and notes on items kept on this device only.
private enum StorePlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [V1.self]
    static let stages: [MigrationStage] = []

    enum V1: VersionedSchema {
        static let versionIdentifier: Schema.Version = "1.0.0"
        static let models: [any Model.Type] = [
            Shelf.self, Item.self, Bin.self, Node.self, Note.self, Tag.self, Pair.self, Team.self, Member.self,
            Label.self, Sticker.self, Category.self, Product.self, Offer.self,
        ]
    }

    enum Shelf: Model {
        static let tableDefinition = TableDefinition("shelves", options: [.strict]) {
            Column("room", .text).notNull()
            Column("number", .text).notNull()
            Column("label", .text)
            PrimaryKey("room", "number")
        }
    }

    enum Item: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("room", .text)
            Column("number", .text)
            ForeignKey(["room", "number"], references: "shelves", ["room", "number"], onDelete: .cascade)
            Index("items_shelf", on: "room", "number")
        }
    }

    /// Its key names the shelf's columns in the other order than the shelf's key.
    enum Bin: Model {
        static let tableDefinition = TableDefinition("bins", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("number", .text)
            Column("room", .text)
            ForeignKey(["number", "room"], references: "shelves", ["number", "room"])
        }
    }

    enum Node: Model {
        static let tableDefinition = TableDefinition("nodes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("parentID", .text).references("nodes", "id", onDelete: .cascade)
        }
    }

    /// Tags on items, with no action: an item's cascaded delete (by its shelf's) orphans them.
    enum Tag: Model {
        static let tableDefinition = TableDefinition("tags", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("itemID", .text).references("items", "id")
        }
    }

    /// A rowid table keyed by two columns, which SQLite lets hold NULL.
    enum Pair: Model {
        static let tableDefinition = TableDefinition("pairs") {
            Column("a", .text)
            Column("b", .text)
            Column("nodeID", .text).references("nodes", "id")
            PrimaryKey("a", "b")
        }
    }

    /// Teams keyed by text, members referring to them by an INTEGER and an ANY column: SQLite
    /// compares a member's value with the team's key as TEXT (the parent's affinity).
    enum Team: Model {
        static let tableDefinition = TableDefinition("teams", options: [.strict]) {
            Column("id", .text).primaryKey()
        }
    }

    enum Member: Model {
        static let tableDefinition = TableDefinition("members", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("teamNumber", .integer).references("teams", "id")
            Column("teamRef", .any).references("teams", "id")
        }
    }

    /// Labels keyed case-insensitively: a sticker's 'abc' refers to the label 'ABC'.
    enum Label: Model {
        static let tableDefinition = TableDefinition("labels", options: [.strict]) {
            Column("id", .text).primaryKey().collate("NOCASE")
        }
    }

    enum Sticker: Model {
        static let tableDefinition = TableDefinition("stickers", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("labelID", .text).references("labels", "id")
        }
    }

    /// Categories that products refer to by their unique code, not by their key.
    enum Category: Model {
        static let tableDefinition = TableDefinition("categories", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("code", .text).notNull().unique()
        }
    }

    enum Product: Model {
        static let tableDefinition = TableDefinition("products", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("categoryCode", .text).references("categories", "code")
            Column("sku", .text).unique()
        }
    }

    /// Offers refer to products by their unique stock code: grandchildren of categories by
    /// unique columns.
    enum Offer: Model {
        static let tableDefinition = TableDefinition("offers", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("productSku", .text).references("products", "sku")
        }
    }

    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", sync: .localOnly, options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("itemID", .text).notNull().references("items", "id")
        }
    }
}

/// Changes from another site, dated one after the other.
private final class OtherSite {
    let siteID = Data(repeating: 9, count: 16)
    private var counter: Int64 = 0
    private let milliseconds = Int64(Date().timeIntervalSince1970 * 1000) - 60_000

    /// A change dated a minute ago (each one after the last), or `secondsFromNow` ahead of this
    /// store's clock: newer than its own changes.
    func change(
        _ operation: PendingChange.Operation, _ table: String, _ key: [String: DatabaseValue],
        _ columns: [String: DatabaseValue] = [:], secondsFromNow: Int64? = nil
    ) -> IncomingChange {
        counter += 1
        let dated =
            secondsFromNow.map { Int64(Date().timeIntervalSince1970 * 1000) + $0 * 1000 } ?? milliseconds
        return IncomingChange(
            table: table, primaryKey: key, operation: operation,
            columns: operation == .insert ? key.merging(columns) { $1 } : columns,
            clock: ChangeClock(validMilliseconds: dated, counter: counter), siteID: siteID)
    }
}

/// What a batch leaves without its parent: the search looks only at the rows the batch touched
/// (ChangeLog+Orphans.swift), and must still find every orphan the whole-table search found.
@Suite("Orphans a batch leaves")
struct OrphanResolutionTests {
    let directory: TemporaryDirectory
    let db: Database
    let log: ChangeLog
    private let other = OtherSite()

    init() throws {
        directory = try TemporaryDirectory()
        db = try Database(path: directory.path("store.sqlite"))
        log = try ChangeLog.open(db, migrator: try Migrator(plan: StorePlan.self))
    }

    private func ids(_ table: String) throws -> [String] {
        try db.fetchAll(String.self, SQL(sql: "SELECT id FROM \(quoteIdentifier(table)) ORDER BY id"))
    }

    /// The local changes waiting to be pushed, as `table:operation`, sorted.
    /// The changes the next push would send, in their order.
    private func queue() throws -> [PendingChange] { try log.pendingChanges(db, limit: 100) }

    /// Each change as `table:operation`, in its order.
    private func operations(_ changes: [PendingChange]) -> [String] {
        changes.map { "\($0.table):\($0.operation.rawValue)" }
    }

    private func pending() throws -> [String] {
        try log.pendingChanges(db, limit: 10_000).map { "\($0.table):\($0.operation.rawValue)" }.sorted()
    }

    private func noOrphan() throws -> Bool { try db.fetchAll("PRAGMA foreign_key_check").isEmpty }

    /// A second store whose connection does not enforce foreign keys.
    private func keysOffStore() throws -> (Database, ChangeLog) {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let keysOff = try Database(path: directory.path("keys-off.sqlite"), configuration: configuration)
        return (keysOff, try ChangeLog.open(keysOff, migrator: try Migrator(plan: StorePlan.self)))
    }

    @Test func aChildWhoseParentIsAbsentWaitsInTheStashAndComesBackWithIt() throws {
        let node = other.change(.insert, "nodes", ["id": .text("B")], ["parentID": .text("A")])
        let item = other.change(.insert, "items", ["id": .text("I")], ["room": .text("hall"), "number": .text("1")])
        let outcome = try log.apply([node, item], to: db)
        #expect(outcome.stashed == 2)
        #expect(try ids("nodes").isEmpty && ids("items").isEmpty)
        #expect(try log.stashedCount(db) == 2)

        let parents = [
            other.change(.insert, "nodes", ["id": .text("A")]),
            other.change(.insert, "shelves", ["room": .text("hall"), "number": .text("1")]),
        ]
        #expect(try log.apply(parents, to: db).stashed == 0)
        #expect(try ids("nodes") == ["A", "B"] && ids("items") == ["I"])
        #expect(try pending().isEmpty && noOrphan())
    }

    @Test func aDeletedParentTakesItsChildrenAndGrandchildrenWithNewLocalDeletes() throws {
        let tree = ["A": nil, "B": "A", "C": "B", "D": "C", "E": nil].map { id, parent in
            other.change(.insert, "nodes", ["id": .text(id)], ["parentID": parent.map { .text($0) } ?? .null])
        }
        _ = try log.apply(tree.sorted { $0.clock < $1.clock }, to: db)
        #expect(try ids("nodes") == ["A", "B", "C", "D", "E"])
        let outcome = try log.apply([other.change(.delete, "nodes", ["id": .text("A")])], to: db)
        #expect(outcome.applied == 4)  // the delete, and three new local deletes
        #expect(try ids("nodes") == ["E"])
        #expect(try pending() == ["nodes:delete", "nodes:delete", "nodes:delete"])
        #expect(try log.stashedCount(db) == 0 && noOrphan())
    }

    @Test func aChildArrivingAfterItsParentsDeletionIsDeleted() throws {
        let shelf = ["room": DatabaseValue.text("hall"), "number": .text("1")]
        _ = try log.apply([other.change(.insert, "shelves", shelf)], to: db)
        _ = try log.apply([other.change(.delete, "shelves", shelf)], to: db)
        let late = other.change(.insert, "items", ["id": .text("I")], shelf)
        let outcome = try log.apply([late], to: db)
        #expect(outcome.stashed == 0)
        #expect(try ids("items").isEmpty && log.stashedCount(db) == 0)
        #expect(try pending() == ["items:delete"])
    }

    /// A child refers to its parent by a unique column, not the parent's key: the log keeps only
    /// the deleted parent's key, so the batch notes the code its delete took out. The child is
    /// deleted, as a key's child would be; it used to wait in the stash for ever, and came back
    /// with the next category given the same code.
    @Test func aChildReferringToADeletedParentsUniqueColumnIsDeleted() throws {
        _ = try log.apply(
            [
                other.change(.insert, "categories", ["id": .text("C1")], ["code": .text("fruit")]),
                other.change(.insert, "categories", ["id": .text("C2")], ["code": .text("veg")]),
                other.change(.insert, "products", ["id": .text("apple")], ["categoryCode": .text("fruit")]),
                other.change(.insert, "products", ["id": .text("leek")], ["categoryCode": .text("veg")]),
            ], to: db)
        let outcome = try log.apply([other.change(.delete, "categories", ["id": .text("C1")])], to: db)
        #expect(outcome.applied == 2)  // the delete, and a new local delete of its product
        #expect(try ids("products") == ["leek"])
        #expect(try pending() == ["products:delete"])
        #expect(try log.stashedCount(db) == 0 && noOrphan())
        _ = try log.apply([other.change(.insert, "categories", ["id": .text("C3")], ["code": .text("fruit")])], to: db)
        #expect(try ids("products") == ["leek"])
    }

    /// The product an orphan resolution deletes (its category's code went) takes its offers with
    /// it: they refer to its unique stock code, which the resolution notes as a delete does.
    @Test func aGrandchildByUniqueColumnsGoesWithTheDeletedChild() throws {
        _ = try log.apply(
            [
                other.change(.insert, "categories", ["id": .text("C1")], ["code": .text("fruit")]),
                other.change(
                    .insert, "products", ["id": .text("apple")], ["categoryCode": .text("fruit"), "sku": .text("A-1")]),
                other.change(.insert, "products", ["id": .text("pear")], ["sku": .text("P-1")]),
                other.change(.insert, "offers", ["id": .text("O1")], ["productSku": .text("A-1")]),
                other.change(.insert, "offers", ["id": .text("O2")], ["productSku": .text("P-1")]),
            ], to: db)
        let outcome = try log.apply([other.change(.delete, "categories", ["id": .text("C1")])], to: db)
        // The delete, and new local deletes of the product and its offer.
        #expect(outcome.applied == 3 && outcome.stashed == 0, "\(outcome)")
        #expect(try ids("products") == ["pear"] && ids("offers") == ["O2"])
        #expect(try pending() == ["offers:delete", "products:delete"])
        #expect(try log.stashedCount(db) == 0 && noOrphan())
    }

    /// A row edited here, then stashed waiting for a parent another site moved it to: a push
    /// meanwhile reads the edit from the stash. One that passed it over (made by a build before
    /// pushes read the stash, or one that did not find the row there) let the acknowledged mark go
    /// past it with the next local change pushed. When the parent arrives and the row comes back
    /// with the edit, the edit is queued again; it used to stay here alone, never pushed.
    @Test func aLocalEditOfARowThatWaitedForItsParentIsPushedWhenItComesBack() throws {
        _ = try log.apply(
            [
                other.change(.insert, "categories", ["id": .text("C1")], ["code": .text("fruit")]),
                other.change(.insert, "products", ["id": .text("apple")], ["categoryCode": .text("fruit")]),
            ], to: db)
        try db.execute("UPDATE products SET sku = 'A-1' WHERE id = 'apple'")
        let move = other.change(.update, "products", ["id": .text("apple")], ["categoryCode": .text("fresh")])
        #expect(try log.apply([move], to: db).stashed == 1)
        #expect(try ids("products").isEmpty)
        try db.execute("INSERT INTO categories (id, code) VALUES ('C9', 'local')")
        let pushed = try queue()
        #expect(pushed.map(\.table) == ["products", "categories"])
        #expect(pushed.first?.columns == ["sku": .text("A-1")])
        // As a push that passed the edit over: C9 acknowledged, the edit never sent.
        try log.markPushed(db, upTo: try #require(pushed.last?.sequence))
        #expect(try log.pendingCount(db) == 0)
        _ = try log.apply([other.change(.insert, "categories", ["id": .text("C2")], ["code": .text("fresh")])], to: db)
        #expect(
            try db.fetchAll(String.self, "SELECT id || '|' || categoryCode || '|' || sku FROM products") == [
                "apple|fresh|A-1"
            ])
        let queued = try queue()
        #expect(operations(queued) == ["products:update"])
        #expect(queued.first?.columns["sku"] == .text("A-1"))
    }

    /// The same edit, but the push that read it (or passed it over) while the product waited is
    /// acknowledged only after the product came back: the mark goes past the edit then, so the
    /// edit is queued again even though it was above the mark when the product returned, and the
    /// queue after it with it (the category in flight goes twice, in its place after the edit).
    @Test func aLocalEditIsQueuedAgainWhenThePushMadeWhileItsRowWaitedIsAcknowledgedAfterItCameBack() throws {
        _ = try log.apply(
            [
                other.change(.insert, "categories", ["id": .text("C1")], ["code": .text("fruit")]),
                other.change(.insert, "products", ["id": .text("apple")], ["categoryCode": .text("fruit")]),
            ], to: db)
        try db.execute("UPDATE products SET sku = 'A-1' WHERE id = 'apple'")
        let move = other.change(.update, "products", ["id": .text("apple")], ["categoryCode": .text("fresh")])
        #expect(try log.apply([move], to: db).stashed == 1)
        try db.execute("INSERT INTO categories (id, code) VALUES ('C9', 'local')")
        let inFlight = try queue()
        #expect(inFlight.map(\.table) == ["products", "categories"])
        _ = try log.apply([other.change(.insert, "categories", ["id": .text("C2")], ["code": .text("fresh")])], to: db)
        #expect(try ids("products") == ["apple"])
        try log.markPushed(db, upTo: try #require(inFlight.last?.sequence))
        let queued = try queue()
        #expect(operations(queued) == ["products:update", "categories:insert"])
        #expect(queued.first?.columns["sku"] == .text("A-1"))
    }

    /// Member M, on team 1, is moved here to team 2 and team 1 deleted after; meanwhile another
    /// site moved M to team 9 (by its other key), not here yet, so M waits in the stash. When M
    /// comes back, its move is still pushed before team 1's delete: a peer that applied the
    /// delete alone, with M still on team 1 there, would delete M on every site.
    @Test func aRowBackFromTheStashKeepsItsQueuedEditAheadOfLaterLocalChanges() throws {
        let setup = try membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine()
        try db.execute("DELETE FROM teams WHERE id = '1'")
        let teamNine = other.change(.insert, "teams", ["id": .text("9")])
        _ = try log.apply([teamNine], to: db)
        let queued = try queue()
        #expect(operations(queued) == ["members:update", "teams:delete"])
        // A peer applying them one push at a time keeps M.
        #expect(try membersOnAPeer(having: setup + [teamNine], receiving: queued) == (["M|2"], 0))
    }

    /// As above, but a push while M waited passed its move over (see
    /// ``aLocalEditOfARowThatWaitedForItsParentIsPushedWhenItComesBack()``) and was acknowledged,
    /// and team 1's delete came after that push: M's move is queued again ahead of the delete.
    @Test func aPassedOverEditComesBackAheadOfTheChangesStillQueuedAfterIt() throws {
        _ = try membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine()
        try db.execute("INSERT INTO teams (id) VALUES ('5')")
        try db.execute("DELETE FROM teams WHERE id = '1'")
        let queuedBefore = try queue()
        #expect(
            operations(queuedBefore) == [
                "members:update", "teams:insert", "teams:delete",
            ])
        try log.markPushed(db, upTo: queuedBefore[1].sequence)
        _ = try log.apply([other.change(.insert, "teams", ["id": .text("9")])], to: db)
        let queued = try queue()
        #expect(operations(queued) == ["members:update", "teams:delete"])
        #expect(queued.first?.columns["teamRef"] == .text("2"))
    }

    /// A push while M waits in the stash reads M's values there: its move away from team 1 goes
    /// in its place, before team 1's delete (without it a peer applying the delete deletes M).
    @Test func aPushWhileARowWaitsSendsItsEditInItsPlaceWithTheStashedValues() throws {
        let setup = try membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine()
        try db.execute("DELETE FROM teams WHERE id = '1'")
        let pushed = try queue()
        #expect(operations(pushed) == ["members:update", "teams:delete"])
        #expect(pushed.first?.columns == ["teamRef": .text("2")])
        #expect(try membersOnAPeer(having: Array(setup.dropLast()), receiving: pushed) == (["M|2"], 0))
    }

    /// The same through the read of a batch all of one table (its entries joined to their rows):
    /// M's edit is read from the stash, and so is the insert of a member made here and moved by
    /// another site to a team not here yet.
    @Test func aBatchOfOneTableReadsItsWaitingRowsFromTheStash() throws {
        _ = try membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine()
        try db.execute("INSERT INTO members (id, teamRef, teamNumber) VALUES ('N', '2', 3)")
        let moveAway = other.change(
            .update, "members", ["id": .text("N")], ["teamNumber": .integer(9)], secondsFromNow: 5)
        _ = try log.apply([moveAway], to: db)
        #expect(try ids("members").isEmpty && log.stashedCount(db) == 2)
        let pushed = try queue()
        #expect(operations(pushed) == ["members:update", "members:insert"])
        #expect(pushed.first?.columns == ["teamRef": .text("2")])
        #expect(
            pushed.last?.columns == ["id": .text("N"), "teamRef": .text("2"), "teamNumber": .integer(9)])
    }

    /// M deleted here after this store's edit, then inserted again by another site (the same key,
    /// newer) on a team not here: the stash holds that other life of M, whose values are not the
    /// edit's, so the edit is passed over as any edit of a deleted row is.
    @Test func anEditOfADeletedRowIsNotFilledFromAnotherLifeOfItsKeyInTheStash() throws {
        let setup = [
            other.change(.insert, "teams", ["id": .text("1")]),
            other.change(.insert, "teams", ["id": .text("2")]),
            other.change(.insert, "members", ["id": .text("M")], ["teamRef": .text("1")]),
        ]
        _ = try log.apply(setup, to: db)
        try db.execute("UPDATE members SET teamRef = '2' WHERE id = 'M'")
        try db.execute("DELETE FROM members WHERE id = 'M'")
        let again = other.change(
            .insert, "members", ["id": .text("M")], ["teamRef": .text("1"), "teamNumber": .integer(9)],
            secondsFromNow: 5)
        #expect(try log.apply([again], to: db).stashed == 1)
        #expect(try pending() == ["members:delete"])
    }

    /// M's key was deleted here and inserted again (as an INTEGER PRIMARY KEY or a natural key
    /// does) before the edit: that earlier deletion is older than the edit, so the waiting row is
    /// the edited one, and its move away from team 1 is still pushed before team 1's delete.
    @Test func aReusedKeysWaitingRowStillPushesItsEditInItsPlace() throws {
        _ = try log.apply(
            [
                other.change(.insert, "teams", ["id": .text("1")]),
                other.change(.insert, "teams", ["id": .text("2")]),
                other.change(.insert, "teams", ["id": .text("3")]),
            ], to: db)
        try db.execute("INSERT INTO members (id, teamRef, teamNumber) VALUES ('M', '1', 3)")
        try db.execute("DELETE FROM members WHERE id = 'M'")
        try db.execute("INSERT INTO members (id, teamRef, teamNumber) VALUES ('M', '1', 3)")
        let first = try queue()
        try log.markPushed(db, upTo: try #require(first.last?.sequence))
        try db.execute("UPDATE members SET teamRef = '2' WHERE id = 'M'")
        let moveAway = other.change(
            .update, "members", ["id": .text("M")], ["teamNumber": .integer(9)], secondsFromNow: 5)
        #expect(try log.apply([moveAway], to: db).stashed == 1)
        try db.execute("DELETE FROM teams WHERE id = '1'")
        let pushed = try queue()
        #expect(operations(pushed) == ["members:update", "teams:delete"])
        #expect(pushed.first?.columns == ["teamRef": .text("2")])
    }

    /// M's insert delivered again (a snapshot and the log overlap, Protocol §10.3) while M waits in
    /// the stash: it waits behind M and merges with it by versions when team 9 arrives, instead of
    /// being written whole over this store's newer edit (which was then lost here, and its queued
    /// entry pushed the insert's old value with this store's newer clock). With an app's trigger
    /// on the table the apply reads whether the row is present before it writes, instead of
    /// probing by inserting: both ways.
    @Test(arguments: [false, true]) func anInsertDeliveredAgainWhileItsRowWaitsKeepsTheLocalEdit(appTrigger: Bool)
        throws
    {
        if appTrigger {
            try db.execute("CREATE TABLE audit (entry TEXT)")
            try db.execute(
                "CREATE TRIGGER members_audit AFTER INSERT ON members BEGIN INSERT INTO audit VALUES (NEW.id); END")
        }
        let insertM = try membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine()[3]  // M's insert
        // Merged with M in the stash's retry after the batch; M waits again, as one row.
        _ = try log.apply([insertM], to: db)
        #expect(try log.stashedCount(db) == 1)
        #expect(try ids("members").isEmpty)
        _ = try log.apply([other.change(.insert, "teams", ["id": .text("9")])], to: db)
        #expect(
            try db.fetchAll(String.self, "SELECT id || '|' || teamRef || '|' || teamNumber FROM members")
                == ["M|2|9"])
        #expect(try log.stashedCount(db) == 0)
        let pushed = try queue().filter { $0.table == "members" }
        #expect(pushed.first?.columns == ["teamRef": .text("2")])
    }

    /// While the insert delivered again waits behind M in the stash (until the retry after the
    /// batch merges them, or on another connection in between), a push reads M itself there,
    /// with this store's edit, not the insert's older values.
    @Test func aPushReadsTheWaitingRowNotTheInsertWaitingBehindIt() throws {
        let insertM = try membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine()[3]  // M's insert
        let json = String(decoding: try JSONEncoder().encode(insertM), as: UTF8.self)
        try db.execute(
            """
            INSERT INTO ostore_meta.ostore_stash (tableName, reason, change)
            VALUES ('members', 'its row waits in the stash for its parent', \(json))
            """)
        let pushed = try queue().filter { $0.table == "members" }
        #expect(pushed.first?.columns == ["teamRef": .text("2")])
    }

    /// Many rows waiting and their inserts delivered again in one batch: each waits behind its
    /// row, once (the stash's keys are read once per batch: read per insert, 1,500 of them took
    /// 106 s).
    @Test func manyInsertsDeliveredAgainWhileTheirRowsWaitEachWaitBehindItsRow() throws {
        let count = 1_000
        _ = try log.apply([other.change(.insert, "teams", ["id": .text("1")])], to: db)
        let inserts = (0..<count).map { index in
            other.change(.insert, "members", ["id": .text("M\(index)")], ["teamNumber": .integer(1)])
        }
        _ = try log.apply(inserts, to: db)
        let moves = (0..<count).map { index in
            other.change(.update, "members", ["id": .text("M\(index)")], ["teamNumber": .integer(9)])
        }
        #expect(try log.apply(moves, to: db).stashed == count)
        _ = try log.apply(inserts, to: db)
        #expect(try log.stashedCount(db) == count && ids("members").isEmpty)
        _ = try log.apply([other.change(.insert, "teams", ["id": .text("9")])], to: db)
        #expect(try log.stashedCount(db) == 0)
        #expect(
            try db.fetchValue(Int.self, "SELECT count(*) FROM members WHERE teamNumber = 9") == count)
    }

    /// The members (`id|teamRef`) of a peer that applied `setup`, then `pushed` one change at a
    /// time, and how many changes of its own it then queued (a delete of an orphan, say).
    private func membersOnAPeer(having setup: [IncomingChange], receiving pushed: [PendingChange]) throws
        -> (members: [String], queued: Int)
    {
        let peerDB = try Database(path: directory.path("peer.sqlite"))
        let peer = try ChangeLog.open(peerDB, migrator: try Migrator(plan: StorePlan.self))
        _ = try peer.apply(setup, to: peerDB)
        for change in pushed { _ = try peer.apply([IncomingChange(change, siteID: log.identity.siteID)], to: peerDB) }
        return (
            try peerDB.fetchAll(String.self, "SELECT id || '|' || teamRef FROM members"),
            try peer.pendingCount(peerDB)
        )
    }

    /// Teams 1, 2 and 3 and member M on team 1 (and on team 3 by its other key) from another
    /// site; M moved here to team 2, then there to team 9 (not here): M waits in the stash.
    /// Returns the other site's changes.
    private func membersOfTeamOneMovedHereToTeamTwoAndElsewhereToTeamNine() throws -> [IncomingChange] {
        let setup = [
            other.change(.insert, "teams", ["id": .text("1")]),
            other.change(.insert, "teams", ["id": .text("2")]),
            other.change(.insert, "teams", ["id": .text("3")]),
            other.change(.insert, "members", ["id": .text("M")], ["teamRef": .text("1"), "teamNumber": .integer(3)]),
        ]
        _ = try log.apply(setup, to: db)
        try db.execute("UPDATE members SET teamRef = '2' WHERE id = 'M'")
        let moveAway = other.change(.update, "members", ["id": .text("M")], ["teamNumber": .integer(9)])
        #expect(try log.apply([moveAway], to: db).stashed == 1)
        #expect(try ids("members").isEmpty)
        return setup + [moveAway]
    }

    /// This store deleted the product and pushed the delete; another site inserted it again
    /// (the same key, newer) and moved it to a category not here yet. When it comes back from the
    /// stash, the old local delete is not queued again: the product is present, and pushing
    /// the delete once more would only tell the server what it already holds.
    @Test func aRowBackFromTheStashDoesNotQueueItsOldLocalDeleteAgain() throws {
        _ = try log.apply(
            [
                other.change(.insert, "categories", ["id": .text("C1")], ["code": .text("fruit")]),
                other.change(.insert, "products", ["id": .text("apple")], ["categoryCode": .text("fruit")]),
            ], to: db)
        try db.execute("DELETE FROM products WHERE id = 'apple'")
        let pushed = try queue()
        #expect(operations(pushed) == ["products:delete"])
        try log.markPushed(db, upTo: try #require(pushed.last?.sequence))
        let again = other.change(
            .insert, "products", ["id": .text("apple")], ["categoryCode": .text("fruit")], secondsFromNow: 5)
        #expect(try log.apply([again], to: db).applied == 1)
        let move = other.change(
            .update, "products", ["id": .text("apple")], ["categoryCode": .text("fresh")], secondsFromNow: 6)
        #expect(try log.apply([move], to: db).stashed == 1)
        _ = try log.apply([other.change(.insert, "categories", ["id": .text("C2")], ["code": .text("fresh")])], to: db)
        #expect(try ids("products") == ["apple"])
        #expect(try pending().isEmpty)
    }

    /// A product refers to the category code 'fresh', which no category has yet; a category whose
    /// KEY was 'fresh' was deleted. The log keeps deletions by key only, and that key is not the
    /// code the product refers to: the product waits in the stash for its category, and is not
    /// deleted (a new local delete would win on every site).
    @Test func aChildByAUniqueColumnIsNotDeletedForAnotherRowsDeletedKeyOfTheSameValue() throws {
        _ = try log.apply([other.change(.insert, "categories", ["id": .text("fresh")], ["code": .text("x")])], to: db)
        _ = try log.apply([other.change(.delete, "categories", ["id": .text("fresh")])], to: db)
        let outcome = try log.apply(
            [other.change(.insert, "products", ["id": .text("apple")], ["categoryCode": .text("fresh")])], to: db)
        #expect(outcome.stashed == 1)
        #expect(try pending().isEmpty)
        _ = try log.apply([other.change(.insert, "categories", ["id": .text("C2")], ["code": .text("fresh")])], to: db)
        #expect(try ids("products") == ["apple"])
    }

    @Test func aCompositeKeysChildrenGoWithTheirShelfOnly() throws {
        var batch = [
            other.change(.insert, "shelves", ["room": .text("hall"), "number": .text("1")]),
            other.change(.insert, "shelves", ["room": .text("hall"), "number": .text("2")]),
        ]
        for (id, number) in [("I1", "1"), ("I2", "2"), ("I3", "1")] {
            batch.append(
                other.change(.insert, "items", ["id": .text(id)], ["room": .text("hall"), "number": .text(number)]))
        }
        batch.append(other.change(.insert, "items", ["id": .text("I4")], ["room": .text("hall"), "number": .null]))
        batch.append(other.change(.insert, "bins", ["id": .text("B1")], ["room": .text("hall"), "number": .text("1")]))
        _ = try log.apply(batch, to: db)
        #expect(try ids("items") == ["I1", "I2", "I3", "I4"] && ids("bins") == ["B1"])
        _ = try log.apply([other.change(.delete, "shelves", ["number": .text("1"), "room": .text("hall")])], to: db)
        // I4's key is not set (one column NULL): it refers to no shelf. The bin's key names the
        // shelf's columns in another order; it goes too, not to the stash.
        #expect(try ids("items") == ["I2", "I4"] && ids("bins").isEmpty)
        #expect(try pending() == ["bins:delete", "items:delete", "items:delete"])
        #expect(try log.stashedCount(db) == 0)
        #expect(try noOrphan())
    }

    @Test func aChildMovedToAParentNotPresentWaitsForIt() throws {
        _ = try log.apply(
            [
                other.change(.insert, "nodes", ["id": .text("A")]),
                other.change(.insert, "nodes", ["id": .text("B")], ["parentID": .text("A")]),
                other.change(.insert, "nodes", ["id": .text("C")], ["parentID": .text("B")]),
            ], to: db)
        let move = other.change(.update, "nodes", ["id": .text("B")], ["parentID": .text("Z")])
        #expect(try log.apply([move], to: db).stashed == 2)  // B, and C with it
        #expect(try ids("nodes") == ["A"])
        _ = try log.apply([other.change(.insert, "nodes", ["id": .text("Z")])], to: db)
        #expect(try ids("nodes") == ["A", "B", "C", "Z"])
        #expect(try db.fetchValue(String.self, "SELECT parentID FROM nodes WHERE id = 'B'") == "Z")
        #expect(try pending().isEmpty && log.stashedCount(db) == 0)
    }

    /// More deleted parents and written children than one statement binds (1,000 rows).
    @Test func manyParentsDeletedAndManyChildrenWrittenInOneBatch() throws {
        var batch: [IncomingChange] = []
        for index in 0..<1_500 {
            batch.append(other.change(.insert, "nodes", ["id": .text("P\(index)")]))
            batch.append(other.change(.insert, "nodes", ["id": .text("C\(index)")], ["parentID": .text("P\(index)")]))
        }
        // Children of parents that never arrive, past the first statement's rows.
        for index in 0..<1_100 {
            batch.append(other.change(.insert, "nodes", ["id": .text("W\(index)")], ["parentID": .text("X\(index)")]))
        }
        #expect(try log.apply(batch, to: db).stashed == 1_100)
        #expect(try db.count("nodes") == 3_000)
        let deletes = (0..<1_500).map { other.change(.delete, "nodes", ["id": .text("P\($0)")]) }
        _ = try log.apply(deletes, to: db)
        #expect(try db.count("nodes") == 0)
        // Every child went with a new local delete; the children waiting in the stash still wait.
        #expect(try pending() == Array(repeating: "nodes:delete", count: 1_500))
        #expect(try log.stashedCount(db) == 1_100)
        #expect(try noOrphan())
    }

    /// The proof reads SQLite's own foreign keys: a note kept on this device refers to an item
    /// another site deletes. The search (by the synced tables' rules) leaves the note; the proof
    /// must refuse the batch rather than commit an orphan. Without the proof this batch commits.
    @Test func aBatchLeavingAnOrphanInATableThatDoesNotSyncIsRefusedWhole() throws {
        let item = other.change(.insert, "items", ["id": .text("I")])
        _ = try log.apply([item], to: db)
        try db.execute("INSERT INTO notes (id, itemID) VALUES ('N', 'I')")
        let batch = [
            other.change(.insert, "nodes", ["id": .text("A")]),
            other.change(.delete, "items", ["id": .text("I")]),
        ]
        #expect(throws: ChangeLogError.self) { try log.apply(batch, to: db) }
        #expect(try ids("items") == ["I"] && ids("nodes").isEmpty)
        #expect(try noOrphan())
    }

    /// An app's own trigger fires while a batch applies and may write rows no change names (here
    /// it takes out a shelf): the search cannot rely on the batch's rows, and searches whole.
    @Test func anAppsTriggerTakingOutAParentDuringABatchLeavesNoOrphan() throws {
        let shelf = ["room": DatabaseValue.text("hall"), "number": .text("1")]
        _ = try log.apply(
            [other.change(.insert, "shelves", shelf), other.change(.insert, "items", ["id": .text("I")], shelf)], to: db
        )
        try db.execute(
            "CREATE TRIGGER clear_hall AFTER INSERT ON nodes BEGIN DELETE FROM shelves WHERE room = 'hall'; END")
        _ = try log.apply([other.change(.insert, "nodes", ["id": .text("A")])], to: db)
        // The shelf went without a tombstone: the item waits for it in the stash.
        #expect(try ids("items").isEmpty && log.stashedCount(db) == 1)
        #expect(try noOrphan())
    }

    /// Inside the caller's transaction keys stay enforced, and the shelf's delete cascades to its
    /// item in SQLite, out of the batch's sight: the item's tag is an orphan no change names. The
    /// search must find it (it waits in the stash) or the caller's COMMIT fails.
    @Test func insideACallersTransactionACascadedDeletesChildrenAreFound() throws {
        let shelf = ["room": DatabaseValue.text("hall"), "number": .text("1")]
        _ = try log.apply(
            [
                other.change(.insert, "shelves", shelf), other.change(.insert, "items", ["id": .text("I")], shelf),
                other.change(.insert, "tags", ["id": .text("T")], ["itemID": .text("I")]),
            ], to: db)
        try db.transaction { db in _ = try log.apply([other.change(.delete, "shelves", shelf)], to: db) }
        #expect(try ids("items").isEmpty && ids("tags").isEmpty)
        #expect(try log.stashedCount(db) == 1 && noOrphan())
    }

    /// SQLite compares a child's INTEGER 1 with its parent's TEXT key as '1', which is not '01':
    /// the member is an orphan. Compared with the child's affinity, '01' became 1 and matched.
    @Test func aChildIsComparedWithItsParentsKeyAsSQLiteComparesThem() throws {
        let batch = [
            other.change(.insert, "teams", ["id": .text("01")]),
            other.change(.insert, "members", ["id": .text("M")], ["teamNumber": .integer(1)]),
        ]
        #expect(try log.apply(batch, to: db).stashed == 1)
        #expect(try ids("members").isEmpty && noOrphan())
    }

    /// A child column without affinity holds the integer 1, which SQLite finds as its TEXT parent
    /// '1' (the parent's affinity applies): a lookup of the deleted parent's key from the child's
    /// side (`teamRef IN ('1')`, no affinity) finds nothing. The child table is searched whole.
    @Test func aDeletedParentsChildOfAnotherAffinityIsFound() throws {
        _ = try log.apply(
            [
                other.change(.insert, "teams", ["id": .text("1")]),
                other.change(.insert, "members", ["id": .text("M")], ["teamRef": .integer(1)]),
            ], to: db)
        #expect(try ids("members") == ["M"] && noOrphan())
        _ = try log.apply([other.change(.delete, "teams", ["id": .text("1")])], to: db)
        #expect(try ids("members").isEmpty && noOrphan())
    }

    /// An orphan whose key holds NULL (a rowid table's composite key may) is matched by no
    /// `DELETE … WHERE key = ?`: the whole search used to find it again at every pass, for ever.
    @Test func anOrphanWhoseKeyHoldsNullIsRefusedNotSearchedForEver() throws {
        let (keysOff, keysOffLog) = try keysOffStore()
        try keysOff.execute("INSERT INTO pairs (a, b, nodeID) VALUES ('x', NULL, 'Nowhere')")
        #expect(throws: ChangeLogError.self) {
            try keysOffLog.apply([other.change(.insert, "nodes", ["id": .text("A")])], to: keysOff)
        }
        #expect(try keysOff.fetchAll(String.self, "SELECT id FROM nodes").isEmpty)
    }

    /// A trigger fires only through a write to its own table: one on a table the batch does not
    /// write keeps the search on the batch's rows. (The whole search, with its whole-database
    /// `foreign_key_check`, would refuse the batch for a note the app left orphaned with keys off.)
    @Test func anAppsTriggerOnATableTheBatchDoesNotWriteKeepsTheSearchOnItsRows() throws {
        try db.execute("CREATE TABLE audit (entry TEXT)")
        try db.execute("CREATE TRIGGER audit_trim AFTER INSERT ON audit BEGIN DELETE FROM audit; END")
        try db.execute("PRAGMA foreign_keys = OFF")
        try db.execute("INSERT INTO notes (id, itemID) VALUES ('N', 'Gone')")
        try db.execute("PRAGMA foreign_keys = ON")
        let outcome = try log.apply([other.change(.insert, "nodes", ["id": .text("A")])], to: db)
        #expect(outcome.applied == 1 && outcome.stashed == 0)
        #expect(try ids("nodes") == ["A"])
    }

    /// A change naming one column twice in two cases (SQLite compares names case-insensitively)
    /// is refused, key or not: which value SQLite writes and which one the orphan search reads
    /// would otherwise depend on dictionary order.
    @Test func aChangeNamingAColumnTwiceInTwoCasesIsRefused() throws {
        _ = try log.apply([other.change(.insert, "teams", ["id": .text("1")])], to: db)
        let twice = [
            other.change(.insert, "members", ["id": .text("M")], ["teamNumber": .null, "teamnumber": .integer(7)]),
            other.change(.update, "members", ["id": .text("K"), "ID": .text("L")], ["teamRef": .null]),
        ]
        let outcome = try log.apply(twice, to: db)
        #expect(outcome.refused.map(\.index) == [0, 1])
        #expect(try ids("members").isEmpty && log.stashedCount(db) == 0 && noOrphan())
    }

    /// A key of two columns referring to the nodes' one-column key: SQLite cannot check it
    /// ("foreign key mismatch"), and no search can be written for it (it used to build SQL
    /// comparing two columns with one). SQLite's own check of the table reports it.
    @Test func aKeyWithoutMatchingParentColumnsIsLeftToSQLitesCheck() throws {
        _ = try log.apply([other.change(.insert, "nodes", ["id": .text("A")])], to: db)
        try db.execute("CREATE TABLE twins (a TEXT, b TEXT, FOREIGN KEY (a, b) REFERENCES nodes)")
        let error = #expect(throws: (any Error).self) {
            try log.apply([other.change(.delete, "nodes", ["id": .text("A")])], to: db)
        }
        #expect(error.map { "\($0)".contains("foreign key mismatch") } == true)
        #expect(try ids("nodes") == ["A"])
    }

    /// Another program (keys off, as in the `sqlite3` shell) leaves an orphan node. Once the store
    /// notices its writes, the next batch searches every child table whole, as before the search
    /// looked at the batch's rows only: the orphan waits in the stash instead of staying to fail
    /// the next migration's `foreign_key_check`.
    @Test func afterWritesByAnotherProgramTheNextBatchSearchesWhole() throws {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let shell = try Database(path: directory.path("store.sqlite"), configuration: configuration)
        try shell.execute("INSERT INTO nodes (id, parentID) VALUES ('Mine', 'Nowhere')")
        #expect(try log.reconcileCoverage(db).unloggedRows == 1)
        let outcome = try log.apply([other.change(.insert, "teams", ["id": .text("1")])], to: db)
        #expect(outcome.stashed == 1)
        #expect(try ids("nodes").isEmpty && noOrphan())
        // Once: the next batch looks at its own rows again (the whole-database check would refuse
        // it for this note, which does not sync, so no reconciliation notes it).
        try shell.execute("INSERT INTO notes (id, itemID) VALUES ('N', 'Gone')")
        _ = try log.apply([other.change(.insert, "teams", ["id": .text("2")])], to: db)
        #expect(try ids("teams") == ["1", "2"])
    }

    /// A sticker refers to the NOCASE-keyed label 'ABC' as 'abc'; the label's deletion is logged
    /// under 'ABC'. The sticker goes with it (a local delete), not to the stash for ever.
    @Test func aChildOfADeletedParentWithANocaseKeyIsDeleted() throws {
        _ = try log.apply(
            [
                other.change(.insert, "labels", ["id": .text("ABC")]),
                other.change(.insert, "stickers", ["id": .text("S")], ["labelID": .text("abc")]),
            ], to: db)
        #expect(try ids("stickers") == ["S"] && noOrphan())
        let outcome = try log.apply([other.change(.delete, "labels", ["id": .text("ABC")])], to: db)
        #expect(try outcome.stashed == 0 && log.stashedCount(db) == 0)
        #expect(try ids("stickers").isEmpty && pending() == ["stickers:delete"])
    }

    /// A connection that does not enforce keys: the app's own writes can leave orphans, so every
    /// child table is searched whole, as before (the app's orphan node waits in the stash).
    @Test func withKeysOffTheWholeTablesAreSearched() throws {
        let (keysOff, keysOffLog) = try keysOffStore()
        try keysOff.execute("INSERT INTO nodes (id, parentID) VALUES ('Mine', 'Nowhere')")
        let outcome = try keysOffLog.apply([other.change(.insert, "nodes", ["id": .text("A")])], to: keysOff)
        #expect(outcome.stashed == 1)
        #expect(try keysOff.fetchAll(String.self, "SELECT id FROM nodes") == ["A"])
    }
}
