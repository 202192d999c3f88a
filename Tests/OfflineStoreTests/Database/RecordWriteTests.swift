import Foundation
import OfflineStore
import RemindersModel
import TestSupport
import Testing

/// GRDB's README "Player": a plain table of records, written and read by key without SQL.
private struct Player: Codable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "player"
    var id: Int64
    var name: String
    var score: Int
}

/// A row of a table whose key has two columns.
private struct Membership: Codable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "membership"
    var team: String
    var member: String
    var role: String
}

/// A record whose coding keys miss a column of its table's key.
private struct Nameless: Codable, PersistableRecord {
    static let databaseTableName = "player"
    var name: String
    var score: Int
}

/// The change log's reminders lists, as records.
private struct ReminderList: Codable, Equatable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "remindersLists"
    var id: String
    var name: String
}

/// Records written and read by primary key (update, save, upsert, delete, exists, fetch and
/// delete by keys), single and composite.
@Suite("Records by key")
struct RecordWriteTests {
    let directory: TemporaryDirectory
    let db: Database

    init() throws {
        directory = try TemporaryDirectory()
        db = try Database(path: directory.path("records.sqlite"))
        try db.execute("CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL)")
        try db.execute(
            """
            CREATE TABLE membership (team TEXT NOT NULL, member TEXT NOT NULL, role TEXT NOT NULL,
                PRIMARY KEY (team, member)) WITHOUT ROWID
            """)
    }

    /// GRDB's README example, ported: create, insert, update, fetch by key, delete; no SQL but the
    /// schema's.
    @Test func thePlayerExampleNeedsNoSQL() throws {
        var arthur = Player(id: 1, name: "Arthur", score: 100)
        try arthur.insert(db)
        try Player(id: 2, name: "Barbara", score: 1000).insert(db)
        arthur.score = 120
        try arthur.update(db)
        #expect(try Player.fetchOne(db, key: 1) == arthur)
        #expect(try Player.fetchAll(db, keys: [2, 1, 3]).map(\.name) == ["Barbara", "Arthur"])
        #expect(try arthur.exists(db) && !(try Player.exists(db, key: 3)))
        #expect(try arthur.delete(db))
        #expect(try !arthur.delete(db))
        #expect(try Player.fetchOne(db, key: 1) == nil)
        #expect(try Player.deleteAll(db, keys: [1, 2]) == 1)
        #expect(try Player.fetchAll(db, keys: [1, 2]).isEmpty)
    }

    /// The example's observation: the players, told again after each write to their table.
    @Test func thePlayerExampleObservesThePlayers() throws {
        let pool = try DatabasePool(path: directory.path("players.sqlite"))
        try pool.write { db in
            try db.execute("CREATE TABLE player (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score INTEGER NOT NULL)")
        }
        let told = Locked<[[String]]>([])
        let cancellable = ValueObservation { db in try Player.fetchAll(db) }
            .start(
                in: pool, onError: { _ in }, onChange: { players in told.withLock { $0.append(players.map(\.name)) } })
        #expect(eventually { told.value == [[]] })
        try pool.write { db in try Player(id: 1, name: "Arthur", score: 100).insert(db) }
        try pool.write { db in try Player(id: 2, name: "Barbara", score: 1000).insert(db) }
        #expect(eventually { told.value.last == ["Arthur", "Barbara"] })
        try pool.write { db in _ = try Player.deleteOne(db, key: 1) }
        #expect(eventually { told.value.last == ["Barbara"] })
        cancellable.cancel()
    }

    @Test func updateSaveAndUpsert() throws {
        let missing = Player(id: 7, name: "Nobody", score: 0)
        #expect {
            try missing.update(db)
        } throws: { error in
            (error as? DatabaseError)?.resultCode == DatabaseError.recordNotFound
                && "\(error)".contains("no row of player has the key of this record")
        }
        try missing.save(db)  // no row: inserted
        var saved = missing
        saved.name = "Somebody"
        try saved.save(db)  // a row: updated
        #expect(try Player.fetchOne(db, key: 7) == saved)

        try Player(id: 8, name: "Upserted", score: 1).upsert(db)
        try Player(id: 8, name: "Upserted again", score: 2).upsert(db)
        #expect(try Player.fetchOne(db, key: 8) == Player(id: 8, name: "Upserted again", score: 2))
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM player") == 2)

        var partial = saved
        partial.name = "Not written"
        partial.score = 55
        try partial.update(db, columns: ["score"])
        #expect(try Player.fetchOne(db, key: 7) == Player(id: 7, name: "Somebody", score: 55))
        #expect(throws: DatabaseError.self) { try partial.update(db, columns: ["scroe"]) }
    }

    @Test func updateChangesWritesOnlyWhatDiffers() throws {
        let original = Player(id: 1, name: "Arthur", score: 100)
        try original.insert(db)
        #expect(try !original.updateChanges(db, from: original))
        var changed = original
        changed.score = 101
        // Another writer's name change survives: only the score is written.
        try db.execute("UPDATE player SET name = 'Art' WHERE id = 1")
        #expect(try changed.updateChanges(db, from: original))
        #expect(try Player.fetchOne(db, key: 1) == Player(id: 1, name: "Art", score: 101))
        var moved = changed
        moved.id = 2
        #expect(throws: DatabaseError.self) { try moved.updateChanges(db, from: original) }
    }

    @Test func compositeKeysAreNamed() throws {
        try Membership(team: "blue", member: "bob", role: "owner").insert(db)
        try Membership(team: "blue", member: "carol", role: "guest").insert(db)
        try Membership(team: "red", member: "bob", role: "guest").insert(db)
        #expect(try Membership.fetchOne(db, key: ["team": "blue", "member": "carol"])?.role == "guest")
        #expect(try Membership.fetchOne(db, key: ["Member": "bob", "TEAM": "red"])?.role == "guest")
        #expect(try Membership.exists(db, key: ["team": "red", "member": "bob"]))
        #expect(try !Membership.exists(db, key: ["team": "red", "member": "carol"]))
        #expect(
            try Membership.fetchAll(db, keys: [["team": "red", "member": "bob"], ["team": "blue", "member": "bob"]])
                .map(\.role) == ["guest", "owner"])
        var carol = Membership(team: "blue", member: "carol", role: "owner")
        try carol.update(db)
        carol.role = "admin"
        try carol.upsert(db)
        #expect(try Membership.fetchOne(db, key: ["team": "blue", "member": "carol"]) == carol)
        #expect(
            try Membership.deleteAll(db, keys: [["team": "blue", "member": "carol"], ["team": "x", "member": "y"]]) == 1
        )
        #expect(try Membership.deleteOne(db, key: ["team": "red", "member": "bob"]))
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM membership") == 1)

        // A single value for a two-column key, a column not of the key, a column missing.
        for attempt in [
            { _ = try Membership.fetchOne(db, key: "blue") },
            { _ = try Membership.fetchOne(db, key: ["team": "blue", "role": "owner"]) },
            { _ = try Membership.fetchOne(db, key: ["team": "blue"]) },
        ] as [() throws -> Void] {
            #expect(throws: DatabaseError.self) { try attempt() }
        }
    }

    @Test func aRecordThatDoesNotEncodeItsKeyOrATableWithoutOneIsRefusedByName() throws {
        #expect {
            try Nameless(name: "x", score: 1).update(db)
        } throws: { error in
            "\(error)".contains("Nameless encodes no id, a column of the primary key of player")
        }
        try db.execute("CREATE TABLE notes (body TEXT)")
        struct Note: Codable, PersistableRecord {
            static let databaseTableName = "notes"
            var body: String
        }
        #expect {
            try Note(body: "x").delete(db)
        } throws: { error in
            "\(error)".contains("table notes has no PRIMARY KEY")
        }
    }

    /// Through the change log: an upsert over an existing row is an update of the columns that
    /// changed, an update of every column records only those whose value changed.
    @Test func changeLoggedWritesRecordOnlyTheColumnsTheyChanged() throws {
        let store = try Database(path: directory.path("reminders.sqlite"))
        let log = try ChangeLog.open(store, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        try ReminderList(id: "L", name: "Home").insert(store)
        try ReminderList(id: "L", name: "Home").update(store)  // nothing differs: nothing recorded
        try ReminderList(id: "L", name: "House").upsert(store)
        try ReminderList(id: "M", name: "Work").upsert(store)
        let changes = try log.pendingChanges(store)
        #expect(changes.map(\.operation) == [.insert, .update, .insert])
        #expect(changes[1].columns == ["name": .text("House")])
    }
}
