import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

@testable import OfflineStoreMigrations

@Suite("Schema model, canonical form and introspection")
struct SchemaModelTests {
    @Test func versionsParsePrintAndOrder() {
        #expect(Schema.Version("1.1.0") == Schema.Version(1, 1, 0))
        #expect(Schema.Version(1, 10, 0) > Schema.Version(1, 9, 9))
        #expect(Schema.Version(1, 2, 3).description == "1.2.3")
        // The protocol's rules: three parts, no leading zeros (a version has one text).
        for bad in ["", "1.", "a.b", "1.2.3.4", "-1.0", " 1.0", "1.0 ", "2", "1.1", "01.1.0", "1.01.0", "1.1.00"] {
            #expect(Schema.Version(bad) == nil, "\(bad)")
        }
    }

    @Test func versionsRoundTripThroughJSONAsStrings() throws {
        let data = try JSONEncoder().encode(Schema.Version(1, 1, 0))
        #expect(String(decoding: data, as: UTF8.self) == "\"1.1.0\"")
        #expect(try JSONDecoder().decode(Schema.Version.self, from: data) == "1.1.0")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Schema.Version.self, from: Data("\"x\"".utf8)) }
    }

    enum Ordered: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull().defaults("")
            Column("count", .integer)
        }
    }

    enum Reordered: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("count", .integer)
            Column("name", .text).notNull().defaults("")
            Column("id", .text).primaryKey()
        }
    }

    enum Retyped: Model {
        static let tableDefinition = TableDefinition("items", options: [.strict]) {
            Column("id", .text).primaryKey()
            Column("name", .text).notNull().defaults("")
            Column("count", .real)
        }
    }

    @Test func theFingerprintIgnoresColumnOrderButNotTypes() throws {
        let ordered = try SchemaSnapshot(version: "1.0.0", tables: [Ordered.tableDefinition])
        let reordered = try SchemaSnapshot(version: "1.0.0", tables: [Reordered.tableDefinition])
        let retyped = try SchemaSnapshot(version: "1.0.0", tables: [Retyped.tableDefinition])
        #expect(ordered.fingerprint == reordered.fingerprint)
        #expect(ordered.fingerprint != retyped.fingerprint)
        #expect(ordered.fingerprint.count == 64)
    }

    @Test func theFingerprintIsStableAcrossRunsAndPlatforms() throws {
        // A golden value: the canonical text is platform-independent, so a change here means
        // every shipped checksum changes. Change it only with a new canonical-text version.
        let snapshot = try SchemaSnapshot(version: "1.0.0", tables: [Ordered.tableDefinition])
        #expect(
            snapshot.canonicalText == """
                offline-store-schema 1
                table "items" table synced strict
                  column "count" INTEGER
                  column "id" TEXT not-null
                  column "name" TEXT not-null default ''
                  primary-key (ID)

                """)
        #expect(snapshot.fingerprint == "ebe2d85e67aae5b88a5a134eb787bfa0ae83cf122aedec3a77bd5326f427a327")
    }

    @Test func aLiveDatabaseReadsBackAsItsDeclarationForEveryRemindersVersion() throws {
        for schema in RemindersMigrationPlan.schemas {
            let db = try Database.inMemory()
            let declared = try schema.snapshot()
            for table in declared.tables {
                try db.execute(sql: table.createTableSQL())
                for index in table.indexes { try db.execute(sql: table.createIndexSQL(index)) }
            }
            let live = try SchemaSnapshot(liveDatabase: db)
            #expect(live.differences(toReach: declared).isEmpty, "\(schema): \(live.differences(toReach: declared))")
            #expect(live.tables.map(\.name) == declared.tables.map(\.name))
        }
    }

    enum Everything: Model {
        static let tableDefinition = TableDefinition("everything", sync: .localOnly) {
            Column("id", .integer).primaryKey(autoincrement: true)
            Column("code", .text).notNull().collate("nocase").unique()
            Column("score", .real).defaults(sql: "0.5 * 2").check("score >= 0")
            Column("payload", .blob).defaults(Data([0xCA, 0xFE]))
            Column("anything", .any)
            Column("parentID", .integer).references("everything", "id", onDelete: .setNull, onUpdate: .cascade)
            Check("length(code) < 10")
            Unique("score", "payload")
            Index("everything_open", columns: [IndexedColumn("score", descending: true)], where: "parentID IS NULL")
        }
    }

    @Test func everyConstraintKindSurvivesIntrospection() throws {
        let declared = try SchemaSnapshot(version: "1.0.0", tables: [Everything.tableDefinition])
        let db = try Database.inMemory()
        let table = declared.tables[0]
        try db.execute(sql: table.createTableSQL())
        for index in table.indexes { try db.execute(sql: table.createIndexSQL(index)) }
        let live = try SchemaSnapshot(liveDatabase: db)
        #expect(live.differences(toReach: declared).isEmpty, "\(live.differences(toReach: declared))")
        let liveText = live.canonicalText
        #expect(liveText.contains("autoincrement"))
        #expect(liveText.contains("collate NOCASE"))
        #expect(liveText.contains("where PARENTID IS NULL"))
        #expect(liveText.contains("on-delete SET NULL on-update CASCADE"))
    }

    @Test func theSQLEscapeHatchComparesLikeTheBuilder() throws {
        let fromSQL = TableDefinition(
            sql:
                "CREATE TABLE items (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL DEFAULT '', count INTEGER) STRICT"
        )
        let viaSQL = try SchemaSnapshot(version: "1.0.0", tables: [fromSQL])
        let viaBuilder = try SchemaSnapshot(version: "1.0.0", tables: [Ordered.tableDefinition])
        #expect(viaSQL.fingerprint == viaBuilder.fingerprint)
        #expect(throws: SchemaError.self) {
            try SchemaSnapshot(version: "1.0.0", tables: [TableDefinition(sql: "CREATE TABLE broken (")])
        }
    }

    @Test func invalidDeclarationsAreRefusedWithTheTableAndColumnNamed() {
        func error(_ table: TableDefinition, _ others: [TableDefinition] = []) -> SchemaError? {
            do {
                _ = try SchemaSnapshot(version: "1.0.0", tables: [table] + others)
                return nil
            } catch { return error }
        }
        let duplicate = error(
            TableDefinition("t") {
                Column("a", .text)
                Column("A", .text)
            })
        #expect(duplicate?.column == "A" && duplicate?.table == "t")
        let strictType = error(
            TableDefinition("t", options: [.strict]) { Column("a", ColumnType(rawValue: "VARCHAR(3)")) })
        #expect(strictType?.message.contains("STRICT") == true)
        let reserved = error(TableDefinition("ostore_things") { Column("a", .text) })
        #expect(reserved?.message.contains("reserved") == true)
        let dangling = error(TableDefinition("t") { Column("p", .text).references("parents", "id") })
        #expect(dangling?.message.contains("parents") == true)
        let notAKey = error(
            TableDefinition("t") { Column("p", .text).references("parents", "name") },
            [
                TableDefinition("parents") {
                    Column("id", .text).primaryKey()
                    Column("name", .text)
                }
            ])
        #expect(notAKey?.message.contains("neither its primary key nor UNIQUE") == true)
        let twoKeys = error(
            TableDefinition("t") {
                Column("a", .text).primaryKey()
                Column("b", .text)
                PrimaryKey("a", "b")
            })
        #expect(twoKeys?.message.contains("more than one primary key") == true)
        let badIndex = error(
            TableDefinition("t") {
                Column("a", .text)
                Index("t_b", on: "b")
            })
        #expect(badIndex?.column == "b")
    }

    @Test func nonAdditiveDifferencesNameTheColumnAndTheFix() throws {
        let db = try Database.inMemory()
        try db.execute(
            sql: """
                CREATE TABLE items (id TEXT NOT NULL PRIMARY KEY, name TEXT NOT NULL DEFAULT '', count INTEGER,
                    legacy TEXT, parentID TEXT) STRICT
                """)
        let target = try SchemaSnapshot(
            version: "2.0.0",
            tables: [
                TableDefinition("items", options: [.strict]) {
                    Column("id", .text).primaryKey()
                    Column("name", .text).notNull().defaults("")
                    Column("count", .real).notNull().defaults(0)
                    Column("parentID", .text).references("items", "id")
                    Column("added", .text).notNull()
                }
            ])
        let differences = try SchemaSnapshot(liveDatabase: db).differences(toReach: target)
        func find(_ kind: SchemaDifference.Kind) -> SchemaDifference? { differences.first { $0.kind == kind } }
        #expect(find(.unexpectedColumn)?.column == "legacy")
        #expect(find(.unexpectedColumn)?.fix.contains("never drops a column") == true)
        #expect(find(.columnTypeChanged)?.column == "count")
        #expect(find(.columnTypeChanged)?.fix.contains("add a new column") == true)
        #expect(find(.notNullChanged)?.column == "count")
        #expect(find(.foreignKeysChanged)?.fix.contains("rebuild") == true)
        #expect(find(.missingColumn)?.column == "added")
        #expect(find(.missingColumn)?.isAdditive == false)
        #expect(differences.allSatisfy { $0.table == "items" })
    }

    @Test func theSHA256MatchesTheStandardTestVectors() {
        #expect(SHA256.hexDigest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hexDigest(String(repeating: "a", count: 1_000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3")
    }
}
