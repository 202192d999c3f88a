import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

@testable import OfflineStoreChangeLog

/// A wall clock the test moves by hand.
private final class FakeWallClock: @unchecked Sendable {
    // Only touched from the test's own thread, one call at a time.
    var milliseconds: Int64
    init(_ milliseconds: Int64) { self.milliseconds = milliseconds }
}

@Suite("Hybrid logical clock")
struct HybridLogicalClockTests {
    @Test func readingsOnlyGoForwardEvenWhenTheWallClockGoesBack() {
        let wall = FakeWallClock(1_000_000)
        let clock = HybridLogicalClock(lastIssued: .zero, wallClock: { wall.milliseconds })
        let first = clock.now()
        let second = clock.now()
        wall.milliseconds = 999_000  // NTP stepped the clock back a second
        let third = clock.now()
        wall.milliseconds = 1_000_500
        let fourth = clock.now()
        #expect(first == ChangeClock(validMilliseconds: 1_000_000, counter: 0))
        #expect(second == ChangeClock(validMilliseconds: 1_000_000, counter: 1))
        #expect(third == ChangeClock(validMilliseconds: 1_000_000, counter: 2))
        #expect(fourth == ChangeClock(validMilliseconds: 1_000_500, counter: 0))
    }

    @Test func aRestartContinuesAfterThePersistedReading() {
        let clock = HybridLogicalClock(
            lastIssued: ChangeClock(validMilliseconds: 5_000, counter: 7), wallClock: { 4_000 })
        #expect(clock.now() == ChangeClock(validMilliseconds: 5_000, counter: 8))
    }

    @Test func aFullCounterBorrowsTheNextMillisecond() {
        let clock = HybridLogicalClock(
            lastIssued: ChangeClock(validMilliseconds: 10, counter: ChangeClock.maximumCounter), wallClock: { 10 })
        #expect(clock.now() == ChangeClock(validMilliseconds: 11, counter: 0))
    }

    @Test func aFullCounterAtTheLastMillisecondStaysAtTheLastReading() {
        let last = ChangeClock(validMilliseconds: ChangeClock.maximumMilliseconds, counter: ChangeClock.maximumCounter)
        let clock = HybridLogicalClock(lastIssued: last, wallClock: { ChangeClock.maximumMilliseconds + 5 })
        #expect(clock.now() == last)
    }

    @Test func aFullCounterAfterAReceivedClockBorrowsTheMillisecondAfterIt() throws {
        let clock = HybridLogicalClock(lastIssued: .zero, maximumDrift: .seconds(60), wallClock: { 1_000_000 })
        try clock.receive(ChangeClock(validMilliseconds: 1_060_000, counter: ChangeClock.maximumCounter))
        #expect(clock.now() == ChangeClock(validMilliseconds: 1_060_001, counter: 0))
        #expect(clock.now() == ChangeClock(validMilliseconds: 1_060_001, counter: 1))
    }

    @Test func aReceivedClockIsAdoptedWithinTheDriftBoundAndRefusedBeyondIt() throws {
        let wall = FakeWallClock(1_000_000)
        let clock = HybridLogicalClock(lastIssued: .zero, maximumDrift: .seconds(60), wallClock: { wall.milliseconds })
        try clock.receive(ChangeClock(validMilliseconds: 1_050_000, counter: 4))
        #expect(clock.now() == ChangeClock(validMilliseconds: 1_050_000, counter: 5))
        var refused: ChangeLogError?
        do { try clock.receive(ChangeClock(validMilliseconds: 1_061_000, counter: 0)) } catch { refused = error }
        #expect(refused?.kind == .clockTooFarInFuture)
        #expect(clock.lastIssued == ChangeClock(validMilliseconds: 1_050_000, counter: 5))
    }

    @Test func packedIntegersOrderLikeTheClocksAndTextRoundTrips() throws {
        let stamps = [
            ChangeClock(validMilliseconds: 0, counter: 1), ChangeClock(validMilliseconds: 1, counter: 0),
            ChangeClock(validMilliseconds: 1, counter: 65_535), ChangeClock(validMilliseconds: 2, counter: 0),
        ]
        #expect(stamps.map(\.packed) == stamps.map(\.packed).sorted())
        for stamp in stamps {
            #expect(ChangeClock(packed: stamp.packed) == stamp)
            #expect(ChangeClock(stamp.description) == stamp)
        }
        // One clock has one text, the wire's: leading zeros and signs are refused.
        for bad in [
            "", "1", "1-", "-1", "1-65536", "a-1", "1-1-1", "281474976710656-0", "01-2", "1-02", "+1-2", " 1-2",
        ] {
            #expect(ChangeClock(bad) == nil, "\(bad)")
        }
        #expect(ChangeClock(packed: -1) == nil)
        let json = try JSONEncoder().encode(ChangeClock(validMilliseconds: 3, counter: 2))
        #expect(String(decoding: json, as: UTF8.self) == "\"3-2\"")
    }
}

@Suite("Row identity of synced tables")
struct RowIdentityTests {
    func refusal(_ table: TableDefinition) -> ChangeLogError? {
        do {
            try SchemaSnapshot(version: "1.0.0", tables: [table]).validateRowIdentityForSync()
            return nil
        } catch let error as ChangeLogError {
            return error
        } catch {
            return nil
        }
    }

    @Test func theRemindersSchemasAreSyncable() throws {
        for schema in RemindersMigrationPlan.schemas { try schema.snapshot().validateRowIdentityForSync() }
    }

    @Test func rowidIntegerAndAutoincrementKeysAreRefusedWithWhatToUse() {
        let integerKey = refusal(TableDefinition("notes") { Column("id", .integer).primaryKey() })
        #expect(integerKey?.kind == .unsuitableRowIdentity)
        #expect(integerKey?.table == "notes")
        #expect(integerKey?.message.contains("every device counts from 1") == true)
        #expect(integerKey?.fix?.contains("UUID") == true)
        let autoincrement = refusal(TableDefinition("notes") { Column("id", .integer).primaryKey(autoincrement: true) })
        #expect(autoincrement?.kind == .unsuitableRowIdentity)
        let rowid = refusal(TableDefinition("notes") { Column("body", .text) })
        #expect(rowid?.message.contains("rowid") == true)
        let real = refusal(TableDefinition("notes") { Column("id", .real).primaryKey() })
        #expect(real?.message.contains("REAL") == true)
        let fts = refusal(TableDefinition(fts5: "search", columns: ["body"], sync: .synced))
        #expect(fts?.message.contains("virtual table") == true)
    }

    @Test func localOnlyTablesAndCompositeUUIDKeysAreAccepted() {
        #expect(refusal(TableDefinition("cache", sync: .localOnly) { Column("id", .integer).primaryKey() }) == nil)
        #expect(
            refusal(
                TableDefinition("links", options: [.withoutRowID]) {
                    Column("a", .text).notNull()
                    Column("b", .blob).notNull()
                    PrimaryKey("a", "b")
                }) == nil)
    }
}

@Suite("Metadatabase and store identity")
struct MetadatabaseTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    @Test func attachingCreatesTheFileBesideTheDatabaseAndReopeningFindsTheSameIdentity() throws {
        let path = directory.path("store.sqlite")
        let created = try Metadatabase.attach(to: try Database(path: path))
        #expect(created.state == .created)
        #expect(FileManager.default.fileExists(atPath: path + "-ostore-meta"))
        #expect(created.siteID.count == 16)
        let db = try Database(path: path)
        let reopened = try Metadatabase.attach(to: db)
        #expect(reopened.state == .intact)
        #expect(reopened.storeID == created.storeID && reopened.siteID == created.siteID)
        // Attaching twice on one connection is harmless.
        #expect(try Metadatabase.attach(to: db).state == .intact)
        #expect(try db.fetchAll(String.self, "SELECT name FROM pragma_database_list").contains("ostore_meta"))
    }

    @Test func aPurgedMetadatabaseIsRecreatedForTheSameStoreWithANewSite() throws {
        let path = directory.path("store.sqlite")
        let original = try Metadatabase.attach(to: try Database(path: path))
        try FileManager.default.removeItem(atPath: path + "-ostore-meta")
        let recreated = try Metadatabase.attach(to: try Database(path: path))
        #expect(recreated.state == .metadatabaseRecreated)
        #expect(recreated.storeID == original.storeID)
        #expect(recreated.siteID != original.siteID)
    }

    @Test func aPurgedDatabaseTakesTheMetadatabasesIdentity() throws {
        let path = directory.path("store.sqlite")
        let original = try Metadatabase.attach(to: try Database(path: path))
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let recreated = try Metadatabase.attach(to: try Database(path: path))
        #expect(recreated.state == .databaseRecreated)
        #expect(recreated.storeID == original.storeID && recreated.siteID == original.siteID)
    }

    @Test func anotherStoresMetadatabaseIsRefusedUntouched() throws {
        let first = directory.path("first.sqlite")
        let second = directory.path("second.sqlite")
        let firstIdentity = try Metadatabase.attach(to: try Database(path: first))
        _ = try Metadatabase.attach(to: try Database(path: second))
        try FileManager.default.removeItem(atPath: second + "-ostore-meta")
        try FileManager.default.copyItem(atPath: first + "-ostore-meta", toPath: second + "-ostore-meta")
        var refused: ChangeLogError?
        do { try Metadatabase.attach(to: try Database(path: second)) } catch { refused = error as? ChangeLogError }
        #expect(refused?.kind == .metadatabase)
        #expect(refused?.message.contains(firstIdentity.storeID) == true)
        #expect(try Metadatabase.attach(to: try Database(path: first)).state == .intact)
    }

    @Test func theAppsMigrationsIgnoreTheStoresOwnTables() throws {
        let path = directory.path("reminders.sqlite")
        let db = try Database(path: path)
        try Metadatabase.attach(to: db)
        let migrator = try Migrator(plan: RemindersMigrationPlan.self)
        try migrator.migrate(db)
        let live = try SchemaSnapshot(liveDatabase: db)
        #expect(live.differences(toReach: try RemindersSchemaV2_1.snapshot()).isEmpty)
        #expect(try MigrationStatus.problems(in: db).isEmpty)
    }

    @Test func theMetadatabaseTakesMainsSynchronousAndACacheOfAtLeast16MiB() throws {
        let db = try Database(path: directory.path("store.sqlite"))
        try Metadatabase.attach(to: db)
        #expect(try db.fetchValue(Int.self, "PRAGMA ostore_meta.synchronous") == 1)
        #expect(try db.fetchValue(Int.self, "PRAGMA ostore_meta.cache_size") == -16_384)

        // A larger cache of the user's file, in pages, is carried over in KiB.
        let large = try Database(path: directory.path("large.sqlite"))
        try large.execute(sql: "PRAGMA cache_size = 10000")
        try Metadatabase.attach(to: large)
        let pageSize = try #require(try large.fetchValue(Int.self, "PRAGMA page_size"))
        #expect(try large.fetchValue(Int.self, "PRAGMA ostore_meta.cache_size") == -(10_000 * pageSize / 1024))
    }

    @Test func anInMemoryDatabaseHasNoMetadatabase() throws {
        #expect(throws: ChangeLogError.self) { try Metadatabase.attach(to: try Database.inMemory()) }
    }
}
