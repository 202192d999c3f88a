import Foundation
import OfflineStore
import RemindersModel
import Testing

@Suite("Change log reader")
struct ChangeLogReaderTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    func openReminders(_ name: String) throws -> (Database, ChangeLog) {
        let db = try Database(path: directory.path(name))
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R', 'Milk', 'L')")
        try db.execute("INSERT INTO tags (id, name) VALUES ('T', 'home')")
        try db.execute("INSERT INTO reminderTags (reminderID, tagID) VALUES ('R', 'T')")
        try db.execute("UPDATE reminders SET isDone = 1 WHERE id = 'R'")
        return (db, log)
    }

    func readOnly(_ path: String) throws -> Database {
        var configuration = Configuration()
        configuration.readonly = true
        return try Database(path: path, configuration: configuration)
    }

    func attachedSchemas(_ db: Database) throws -> [String] {
        try db.fetchAll(String.self, "SELECT name FROM pragma_database_list ORDER BY seq")
    }

    @Test func theStoresOwnConnectionAndAReadOnlyOneReadTheSameLog() throws {
        let (db, log) = try openReminders("same.sqlite")
        let own = try ChangeLogReader.entries(in: db)
        #expect(own.map(\.operation) == [.insert, .insert, .insert, .insert, .update])
        #expect(own[3].key == [.text("R"), .text("T")])
        #expect(own[4].columns == ["isDone"])
        #expect(own.map(\.sequence) == [1, 2, 3, 4, 5])
        let other = try readOnly(db.path)
        #expect(try ChangeLogReader.entries(in: other) == own)
        #expect(try attachedSchemas(other) == ["main"])

        let summary = try #require(try ChangeLogReader.summary(in: other))
        #expect(summary.storeID == log.identity.storeID)
        #expect(summary.siteID == log.identity.siteID.map { String(format: "%02x", $0) }.joined())
        #expect(summary.pendingChanges == 5)
        try log.markPushed(db, upTo: 3)
        #expect(try ChangeLogReader.summary(in: db)?.pendingChanges == 2)
        #expect(try ChangeLogReader.entries(in: other, pendingOnly: true).map(\.sequence) == [4, 5])
        #expect(try ChangeLogReader.entries(in: other, limit: 2).map(\.isPending) == [false, false])
    }

    @Test func aWritableConnectionGetsAReadOnlyAttachmentForTheCallOnly() throws {
        // `?`, `#`, `%` and a space in the name must reach SQLite as part of the path.
        let (db, _) = try openReminders("odd ?#% name.sqlite")
        let plain = try Database(path: db.path)
        #expect(try ChangeLogReader.entries(in: plain).count == 5)
        #expect(try attachedSchemas(plain) == ["main"])
        // The store then opens its log on that connection as usual, writable.
        let log = try ChangeLog.open(plain, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        try plain.execute("DELETE FROM reminderTags")
        #expect(try log.pendingCount(plain) == 6)
        #expect(try ChangeLogReader.entries(in: plain).last?.operation == .delete)
    }

    @Test func withoutMetadatabaseTheSummaryIsNilAndNoFileIsMade() throws {
        let path = directory.path("plain.sqlite")
        let db = try Database(path: path)
        try Migrator(plan: RemindersMigrationPlan.self).migrate(db)
        #expect(try ChangeLogReader.summary(in: db) == nil)
        #expect(throws: ChangeLogError.self) { try ChangeLogReader.entries(in: db) }
        #expect(!FileManager.default.fileExists(atPath: Metadatabase.path(forDatabaseAt: path)))
        #expect(try ChangeLogReader.summary(in: try Database.inMemory()) == nil)
    }

    @Test func keysOfATableGoneFromTheFileAreReadByTheirForm() throws {
        let (db, _) = try openReminders("gone.sqlite")
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('''a'',''b''', 'looks composite')")
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('1, 2', 'plain')")
        try db.close()
        let plain = try Database(path: directory.path("gone.sqlite"))
        try plain.execute("PRAGMA foreign_keys = OFF")
        try plain.execute("DROP TABLE reminderTags")
        try plain.execute("DROP TABLE remindersLists")
        let entries = try ChangeLogReader.entries(in: plain)
        #expect(entries.first { $0.table == "reminderTags" }?.key == [.text("R"), .text("T")])
        // Without the table, a one-column key that is itself a quote() list cannot be told apart.
        #expect(
            entries.filter { $0.table == "remindersLists" }.map(\.key) == [
                [.text("L")], [.text("a"), .text("b")], [.text("1, 2")],
            ])
    }

    @Test func aMetadatabaseOfAnotherStoreIsRefused() throws {
        let (first, _) = try openReminders("first.sqlite")
        let (second, _) = try openReminders("second.sqlite")
        try first.close()
        try second.close()
        let secondMeta = Metadatabase.path(forDatabaseAt: directory.path("second.sqlite"))
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: secondMeta + suffix) }
        try FileManager.default.copyItem(
            atPath: Metadatabase.path(forDatabaseAt: directory.path("first.sqlite")), toPath: secondMeta)
        let db = try readOnly(directory.path("second.sqlite"))
        let error = #expect(throws: ChangeLogError.self) { try ChangeLogReader.summary(in: db) }
        #expect(error?.kind == .metadatabase)
        #expect(error?.message.contains("belongs to store") == true)
    }
}
