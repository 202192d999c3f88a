import Foundation
import OfflineStore
import Testing

/// Items in lists; version 2 declares the foreign key `items.listID → lists.id`, which only a table
/// rebuild can add.
private enum ItemsV1: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.0.0"
    static let models: [any Model.Type] = [ItemList.self, Item.self, Note.self]

    enum ItemList: Model {
        static let tableDefinition = TableDefinition("lists", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull()
        }
    }

    enum Item: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("listID", .text).notNull()
            Column("rank", .integer).check("rank >= 0")
            Index("items_listID", on: "listID")
        }
    }

    /// Already has a foreign key, so the stage-end check has another table to look at.
    enum Note: Model {
        static let tableDefinition = TableDefinition("notes", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("itemID", .text).notNull().references("items", "id", onDelete: .cascade)
        }
    }
}

private enum ItemsV2: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [ItemsV1.ItemList.self, Item.self, ItemsV1.Note.self]

    enum Item: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("listID", .text).notNull().references("lists", "id", onDelete: .cascade)
            Column("rank", .integer).check("rank >= 0")
            Index("items_listID", on: "listID")
        }
    }
}

/// Version 1 plus two columns, added by a lightweight stage; declared in the order opposite to
/// the one the reconcile adds them in, so the live table's column order differs from the declaration.
private enum ItemsV1WithExtras: VersionedSchema {
    static let versionIdentifier: Schema.Version = "1.1.0"
    static let models: [any Model.Type] = [ItemsV1.ItemList.self, Item.self, ItemsV1.Note.self]

    static func item(foreignKey: Bool) -> TableDefinition {
        TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            if foreignKey {
                Column("listID", .text).notNull().references("lists", "id", onDelete: .cascade)
            } else {
                Column("listID", .text).notNull()
            }
            Column("rank", .integer).check("rank >= 0")
            Column("zone", .text).notNull().defaults("none")
            Column("archivedAt", .real)
            Index("items_listID", on: "listID")
        }
    }

    enum Item: Model {
        static let tableDefinition = ItemsV1WithExtras.item(foreignKey: false)
    }
}

private enum ItemsV2WithExtras: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [ItemsV1.ItemList.self, Item.self, ItemsV1.Note.self]

    enum Item: Model {
        static let tableDefinition = ItemsV1WithExtras.item(foreignKey: true)
    }
}

/// Version 2 with a column the rebuild fills from a join, for the row-count comparison.
private enum ItemsV2WithListName: VersionedSchema {
    static let versionIdentifier: Schema.Version = "2.0.0"
    static let models: [any Model.Type] = [ItemsV1.ItemList.self, Item.self, ItemsV1.Note.self]

    enum Item: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("title", .text).notNull()
            Column("listID", .text).notNull().references("lists", "id", onDelete: .cascade)
            Column("rank", .integer).check("rank >= 0")
            Column("listName", .text)
            Index("items_listID", on: "listID")
        }
    }
}

private enum RebuildPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ItemsV1.self, ItemsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: ItemsV1.self, toVersion: ItemsV2.self,
            willMigrate: { context in
                try context.rebuildTable(ItemsV2.Item.self)
                // A second call finds the target definition and does nothing.
                try context.rebuildTable(ItemsV2.Item.self)
            })
    ]
}

private enum ExtrasPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ItemsV1.self, ItemsV1WithExtras.self, ItemsV2WithExtras.self]
    static let stages: [MigrationStage] = [
        .lightweight(fromVersion: ItemsV1.self, toVersion: ItemsV1WithExtras.self),
        .custom(
            fromVersion: ItemsV1WithExtras.self, toVersion: ItemsV2WithExtras.self,
            willMigrate: { context in try context.rebuildTable(ItemsV2WithExtras.Item.self) }),
    ]
}

/// Copies with an inner join, which loses the items whose list is missing.
private enum LossyJoinPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ItemsV1.self, ItemsV2WithListName.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: ItemsV1.self, toVersion: ItemsV2WithListName.self,
            willMigrate: { context in
                try context.rebuildTable(
                    ItemsV2WithListName.Item.self, values: ["listName": "\"l\".name"],
                    join: "JOIN lists AS \"l\" ON \"l\".id = \"old\".listID")
            })
    ]
}

/// Rebuilds, then writes an orphan into the rebuilt table: only the stage-end check can see it.
private enum OrphanAfterRebuildPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ItemsV1.self, ItemsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: ItemsV1.self, toVersion: ItemsV2.self,
            willMigrate: { context in try context.rebuildTable(ItemsV2.Item.self) },
            didMigrate: { context in
                try context.execute("INSERT INTO items (id, title, listID) VALUES ('late', 'Late orphan', 'nowhere')")
            })
    ]
}

/// Rebuilds, then drops the parent table and creates it again empty: no row is counted as
/// changed, only the schema cookie moves, and the schema ends as declared.
private enum ParentDroppedAfterRebuildPlan: MigrationPlan {
    static let schemas: [any VersionedSchema.Type] = [ItemsV1.self, ItemsV2.self]
    static let stages: [MigrationStage] = [
        .custom(
            fromVersion: ItemsV1.self, toVersion: ItemsV2.self, acknowledgingLintRules: ["drop-table-with-rows"],
            willMigrate: { context in try context.rebuildTable(ItemsV2.Item.self) },
            didMigrate: { context in
                try context.execute("DROP TABLE lists")
                try context.execute(SQL(sql: ItemsV1.ItemList.tableDefinition.createTableSQL()))
            })
    ]
}

@Suite("Table rebuild in a migration stage")
struct TableRebuildMigrationTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    /// A version 1 database with two lists, `count` items, a note and a trigger on items.
    func openV1(_ name: String, count: Int = 50) throws -> Database {
        let db = try Database(path: directory.path(name))
        try Migrator(plan: RebuildPlan.self, releasedUpTo: "1.0.0").migrate(db)
        try db.execute("INSERT INTO lists (id, name) VALUES ('L1', 'Home'), ('L2', 'Work')")
        for index in 0..<count {
            try db.execute(
                "INSERT INTO items (id, title, listID, rank) VALUES (\("I\(index)"), \("Item \(index)"), \(index % 2 == 0 ? "L1" : "L2"), \(index))"
            )
        }
        try db.execute("INSERT INTO notes (id, itemID) VALUES ('N1', 'I0')")
        try db.execute(
            "CREATE TRIGGER items_title AFTER UPDATE OF title ON items BEGIN UPDATE items SET rank = 0 WHERE id = new.id; END"
        )
        return db
    }

    func items(_ db: Database) throws -> [String] {
        try db.fetchAll(
            String.self, "SELECT id || '|' || title || '|' || listID || '|' || ifnull(rank, '-') FROM items ORDER BY id"
        )
    }

    func ledgerVersions(_ db: Database, _ plan: any MigrationPlan.Type) throws -> [Schema.Version] {
        try Migrator(plan: plan).appliedStages(db).map(\.toVersion)
    }

    @Test func aRebuildKeepsEveryRowAndAddsTheForeignKeyIndexAndTrigger() throws {
        let db = try openV1("rebuild.sqlite")
        let before = try items(db)
        let migrator = try Migrator(plan: RebuildPlan.self)
        try migrator.migrate(db)
        #expect(try items(db) == before)
        #expect(try db.foreignKeys(on: "items").count == 1)
        #expect(try db.indexes(on: "items").contains { $0.name == "items_listID" })
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name = 'items_title'") == 1)
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'ostore_rebuild%'") == 0)
        #expect(try db.fetchAll("PRAGMA foreign_key_check").isEmpty)
        #expect(try SchemaSnapshot(liveDatabase: db).differences(toReach: try ItemsV2.snapshot()).isEmpty)
        // Deleting a list now cascades, through the new key.
        try db.execute("DELETE FROM lists WHERE id = 'L2'")
        #expect(try db.count("items") == before.count / 2)
    }

    @Test func aRebuildKeepsEveryValueWhenLiveColumnsAreInAnotherOrder() throws {
        let db = try openV1("extras.sqlite")
        try Migrator(plan: ExtrasPlan.self, releasedUpTo: "1.1.0").migrate(db)
        let liveOrder = try db.fetchAll(String.self, "SELECT name FROM pragma_table_info('items') ORDER BY cid")
        let declaredOrder = ItemsV2WithExtras.Item.tableDefinition.columns.map(\.name)
        try #require(liveOrder != declaredOrder && Set(liveOrder) == Set(declaredOrder))
        try db.execute("UPDATE items SET zone = 'zone ' || id, archivedAt = rank * 1.5 WHERE rank % 3 = 0")
        func rows() throws -> [String] {
            try db.fetchAll(
                String.self,
                """
                SELECT id || '|' || title || '|' || listID || '|' || ifnull(rank, '-') || '|' || zone || '|'
                    || ifnull(archivedAt, '-') FROM items ORDER BY id
                """)
        }
        let before = try rows()
        try Migrator(plan: ExtrasPlan.self).migrate(db)
        #expect(try rows() == before)
        #expect(try db.foreignKeys(on: "items").count == 1)
        #expect(try SchemaSnapshot(liveDatabase: db).differences(toReach: try ItemsV2WithExtras.snapshot()).isEmpty)
    }

    @Test func aRebuildOnAFreshDatabaseCreatesTheTable() throws {
        let db = try Database(path: directory.path("fresh.sqlite"))
        let migrator = try Migrator(plan: RebuildPlan.self)
        try migrator.migrate(db)
        #expect(try db.foreignKeys(on: "items").count == 1)
        #expect(try migrator.hasCompletedMigrations(db))
    }

    @Test func anOrphanFailsTheRebuildAndRollsTheStageBack() throws {
        let db = try openV1("orphan.sqlite")
        try db.execute("PRAGMA foreign_keys = OFF")
        try db.execute("INSERT INTO items (id, title, listID) VALUES ('orphan', 'No list', 'gone')")
        try db.execute("PRAGMA foreign_keys = ON")
        let before = try items(db)
        #expect {
            try Migrator(plan: RebuildPlan.self).migrate(db)
        } throws: { error in
            let error = error as? MigrationError
            return error?.kind == .foreignKeyViolation && error!.details.contains { $0.contains("items") }
        }
        #expect(try items(db) == before)
        #expect(try db.foreignKeys(on: "items").isEmpty)
        #expect(try ledgerVersions(db, RebuildPlan.self) == ["1.0.0"])
    }

    @Test func aJoinThatLosesRowsFailsTheRowCountComparison() throws {
        let db = try openV1("lossy.sqlite")
        try db.execute("PRAGMA foreign_keys = OFF")
        try db.execute("INSERT INTO items (id, title, listID) VALUES ('orphan', 'No list', 'gone')")
        try db.execute("PRAGMA foreign_keys = ON")
        let before = try items(db)
        #expect {
            try Migrator(plan: LossyJoinPlan.self).migrate(db)
        } throws: { error in
            let error = error as? MigrationError
            return error?.kind == .rowCountMismatch && error!.message.contains("51 rows into 50")
                && error!.details.contains { $0.contains("lost") && $0.contains("orphan") }
        }
        #expect(try items(db) == before)
        #expect(try ledgerVersions(db, LossyJoinPlan.self) == ["1.0.0"])
    }

    @Test func aJoinThatKeepsEveryRowFillsTheNewColumn() throws {
        let db = try openV1("join.sqlite")
        try Migrator(plan: LossyJoinPlan.self).migrate(db)
        #expect(try db.scalar(String.self, "SELECT listName FROM items WHERE id = 'I1'") == "Work")
        #expect(try db.count("items") == 50)
    }

    @Test func anOrphanWrittenAfterTheRebuildFailsTheStageEndCheck() throws {
        let db = try openV1("late.sqlite")
        let before = try items(db)
        #expect {
            try Migrator(plan: OrphanAfterRebuildPlan.self).migrate(db)
        } throws: { error in
            (error as? MigrationError)?.kind == .foreignKeyViolation
        }
        #expect(try items(db) == before)
        #expect(try ledgerVersions(db, OrphanAfterRebuildPlan.self) == ["1.0.0"])
    }

    @Test func aParentDroppedAfterTheRebuildFailsTheStageEndCheck() throws {
        let db = try openV1("parent.sqlite")
        #expect {
            try Migrator(plan: ParentDroppedAfterRebuildPlan.self).migrate(db)
        } throws: { error in
            let error = error as? MigrationError
            return error?.kind == .foreignKeyViolation && error!.details.contains { $0.contains("items") }
        }
        #expect(try db.tableExists("lists"))
        #expect(try ledgerVersions(db, ParentDroppedAfterRebuildPlan.self) == ["1.0.0"])
    }

    @Test func anOrphanInAnotherTableFailsTheStageEndCheck() throws {
        let db = try openV1("other.sqlite")
        try db.execute("PRAGMA foreign_keys = OFF")
        try db.execute("INSERT INTO notes (id, itemID) VALUES ('N2', 'no such item')")
        try db.execute("PRAGMA foreign_keys = ON")
        #expect {
            try Migrator(plan: RebuildPlan.self).migrate(db)
        } throws: { error in
            let error = error as? MigrationError
            return error?.kind == .foreignKeyViolation && error!.details.contains { $0.contains("notes") }
        }
        #expect(try db.foreignKeys(on: "items").isEmpty)
        #expect(try ledgerVersions(db, RebuildPlan.self) == ["1.0.0"])
    }
}
