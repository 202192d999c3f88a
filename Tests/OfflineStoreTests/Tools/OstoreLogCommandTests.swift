import Foundation
import OfflineStore
import RemindersModel
import SyncProtocol
import Testing

/// A Reminders store with its change log open and seven logged changes: inserts into three tables
/// (one of them, reminderTags, keyed by two columns), an update of one column, and a row inserted
/// then deleted.
private struct LoggedStore {
    let directory: TemporaryDirectory
    let path: String
    let db: Database
    let log: ChangeLog

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.path("log.sqlite")
        db = try Database(path: path)
        log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R,1', 'It''s', 'L')")
        try db.execute("UPDATE reminders SET title = 'Oat milk' WHERE id = 'R,1'")
        try db.execute("INSERT INTO tags (id, name) VALUES ('T''x', 'home')")
        try db.execute("INSERT INTO reminderTags (reminderID, tagID) VALUES ('R,1', 'T''x')")
        try db.execute("INSERT INTO reminders (id, title, listID) VALUES ('R 2', 'Bread', 'L')")
        try db.execute("DELETE FROM reminders WHERE id = 'R 2'")
    }

    var siteHex: String { log.identity.siteID.map { String(format: "%02x", $0) }.joined() }

    /// The entries as `TABLE OPERATION KEY`, the part of a text line after the sequence, site and clock.
    static let expectedTail = [
        "remindersLists insert 'L'",
        "reminders insert 'R,1'",
        "reminders update(title) 'R,1'",
        "tags insert 'T''x'",
        "reminderTags insert ('R,1', 'T''x')",
        "reminders insert 'R 2'",
        "reminders delete 'R 2'",
    ]
}

private func lines(_ text: String) -> [String] {
    text.split(separator: "\n").map(String.init)
}

private func jsonArray(_ run: CommandRun) throws -> [[String: Any]] {
    try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [[String: Any]])
}

@Suite("ostore log")
struct OstoreLogCommandTests {
    @Test func textLinesGiveSequenceSiteClockTableOperationAndKey() throws {
        let store = try LoggedStore()
        let run = try runOstore(["log", "--db", store.path])
        #expect(run.status == 0, "\(run.error)")
        let entries = lines(run.output).map { $0.split(separator: " ", maxSplits: 3).map(String.init) }
        #expect(entries.map { $0[0] } == (1...7).map(String.init))
        #expect(entries.allSatisfy { $0[1] == store.siteHex })
        let clocks = entries.compactMap { ChangeClock($0[2]) }
        #expect(clocks.count == 7)
        #expect(clocks == clocks.sorted())
        #expect(entries.map { $0[3] } == LoggedStore.expectedTail)
        #expect(run.error == "ostore log: 7 entries; 7 pending in all\n")
    }

    @Test func jsonHasOneObjectPerEntryWithTypedKeys() throws {
        let store = try LoggedStore()
        let run = try runOstore(["log", "--db", store.path, "--json"])
        #expect(run.status == 0, "\(run.error)")
        let entries = try jsonArray(run)
        #expect(
            entries.map { $0["table"] as? String } == [
                "remindersLists", "reminders", "reminders", "tags", "reminderTags", "reminders", "reminders",
            ])
        #expect(
            entries.map { $0["op"] as? String } == [
                "insert", "insert", "update", "insert", "insert", "insert", "delete",
            ])
        #expect(entries.map { $0["columns"] as? [String] } == [[], [], ["title"], [], [], [], []])
        #expect(entries[4]["key"] as? [String] == ["R,1", "T'x"])
        #expect(entries[0]["key"] as? [String] == ["L"])
        #expect(entries.map { $0["seq"] as? Int } == Array(1...7))
        #expect(entries.allSatisfy { $0["site"] as? String == store.siteHex && $0["pending"] as? Bool == true })
        let clocks = entries.compactMap { ($0["clock"] as? String).flatMap(ChangeClock.init) }
        #expect(clocks.count == 7)
    }

    @Test func pendingShowsOnlyTheChangesAfterTheLastPush() throws {
        let store = try LoggedStore()
        try store.log.markPushed(store.db, upTo: 5)
        let pending = try runOstore(["log", "--db", store.path, "--pending"])
        #expect(pending.status == 0, "\(pending.error)")
        #expect(
            lines(pending.output).map { $0.split(separator: " ", maxSplits: 3)[3] } == [
                "reminders insert 'R 2'", "reminders delete 'R 2'",
            ])
        #expect(pending.error == "ostore log: 2 entries pending; 2 pending in all\n")

        let all = try jsonArray(try runOstore(["log", "--db", store.path, "--json"]))
        #expect(all.map { $0["pending"] as? Bool } == [false, false, false, false, false, true, true])
        let pendingJSON = try jsonArray(try runOstore(["log", "--db", store.path, "--json", "--pending"]))
        #expect(pendingJSON.map { $0["seq"] as? Int } == [6, 7])
    }

    @Test func limitCapsTheEntriesInLogOrder() throws {
        let store = try LoggedStore()
        let two = try runOstore(["log", "--db", store.path, "--limit", "2"])
        #expect(
            lines(two.output).map { $0.split(separator: " ", maxSplits: 3)[3] }
                == LoggedStore.expectedTail.prefix(2).map { Substring($0) })
        let none = try runOstore(["log", "--db", store.path, "--json", "--limit=0"])
        #expect(none.status == 0)
        #expect(try jsonArray(none).isEmpty)
        try store.log.markPushed(store.db, upTo: 2)
        let pending = try jsonArray(try runOstore(["log", "--db", store.path, "--json", "--pending", "--limit", "3"]))
        #expect(pending.map { $0["seq"] as? Int } == [3, 4, 5])
        for bad in ["-1", "two", ""] {
            let run = try runOstore(["log", "--db", store.path, "--limit", bad])
            #expect(run.status == 2)
            #expect(run.error.contains("--limit needs a whole number"))
        }
    }

    @Test func changesFromOtherSitesFollowByClockWithTypeFaithfulKeys() throws {
        let store = try LoggedStore()
        let tableID = try #require(
            try store.db.scalar(Int.self, "SELECT id FROM ostore_meta.ostore_tables WHERE name = 'remindersLists'"))
        // Remote entries as a sync layer would apply them: no sequence, another site, keys of
        // every storage class (written here by hand; synced keys are text or blobs in practice),
        // after folding the journal, as the apply does.
        try store.log.foldJournal(store.db)
        let remote: [(DatabaseValue, Int64)] = [
            (.integer(9_007_199_254_740_993), 30), (.real(1.0), 10), (.blob(Data([0, 0xFF])), 20),
            (.integer(42), 40),
        ]
        for (key, clock) in remote {
            try store.db.execute(
                """
                INSERT INTO ostore_meta.ostore_changes (tableID, pk, columnName, clock, site, seq)
                VALUES (\(tableID), \(key), 'name', \(ChangeClock(validMilliseconds: clock, counter: 0).packed), 7, NULL)
                """)
        }
        let run = try runOstore(["log", "--db", store.path, "--json"])
        #expect(run.status == 0, "\(run.error)")
        let entries = try jsonArray(run)
        #expect(entries.count == 11)
        let tail = Array(entries.suffix(4))
        #expect(tail.map { $0["clock"] as? String } == ["10-0", "20-0", "30-0", "40-0"])
        #expect(tail.allSatisfy { $0["site"] as? String == "#7" && $0["seq"] is NSNull })
        #expect(tail.allSatisfy { $0["pending"] as? Bool == false && $0["op"] as? String == "update" })
        #expect((tail[1]["key"] as? [[String: String]]) == [["blob": "AP8="]])
        #expect((tail[2]["key"] as? [[String: String]]) == [["integer": "9007199254740993"]])
        #expect((tail[3]["key"] as? [Int]) == [42])
        // A real stays a real in the text itself: JSONSerialization would read 1.0 and 1 alike.
        #expect(run.output.contains(#""key": [1.0]"#))
        #expect(run.output.contains(#""key": [42]"#))

        let text = lines(try runOstore(["log", "--db", store.path]).output)
        #expect(
            text.suffix(4) == [
                "- #7 10-0 remindersLists update(name) 1.0", "- #7 20-0 remindersLists update(name) X'00FF'",
                "- #7 30-0 remindersLists update(name) 9007199254740993", "- #7 40-0 remindersLists update(name) 42",
            ])
        let pending = try jsonArray(try runOstore(["log", "--db", store.path, "--json", "--pending"]))
        #expect(pending.count == 7)
        let limited = try jsonArray(try runOstore(["log", "--db", store.path, "--json", "--limit", "9"]))
        #expect(limited.suffix(2).map { $0["clock"] as? String } == ["10-0", "20-0"])
    }

    @Test func aDatabaseWithoutMetadatabaseIsAnErrorAndStaysWithoutOne() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("plain.sqlite")
        try Migrator(plan: RemindersMigrationPlan.self).migrate(try Database(path: path))
        let run = try runOstore(["log", "--db", path])
        #expect(run.status == 2)
        #expect(run.output.isEmpty)
        #expect(run.error.contains("has no change log: there is no metadatabase \(path)-ostore-meta"))
        #expect(!FileManager.default.fileExists(atPath: Metadatabase.path(forDatabaseAt: path)))
        for arguments in [["log"], ["log", "--db", "/nonexistent/x.sqlite"], ["log", "--db", path, "extra"]] {
            #expect(try runOstore(arguments).status == 2)
        }
    }

    @Test func statusShowsTheStoreTheSiteAndThePendingChanges() throws {
        let store = try LoggedStore()
        try store.log.markPushed(store.db, upTo: 4)
        let json = try runOstore(["status", "--db", store.path, "--json"])
        #expect(json.status == 0, "\(json.error)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(object["storeID"] as? String == store.log.identity.storeID)
        #expect(object["siteID"] as? String == store.siteHex)
        #expect(object["pendingChanges"] as? Int == 3)
        #expect(object["schemaVersion"] as? String == "2.1.0")
        let text = try runOstore(["status", "--db", store.path]).output
        #expect(text.contains("store id:         \(store.log.identity.storeID)\n"))
        #expect(text.contains("site id:          \(store.siteHex)\n"))
        #expect(text.contains("pending changes:  3"))
    }

    @Test func statusWithoutMetadatabaseHasNullChangeLogFields() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("plain.sqlite")
        try Migrator(plan: RemindersMigrationPlan.self).migrate(try Database(path: path))
        let json = try runOstore(["status", "--db", path, "--json"])
        #expect(json.status == 0, "\(json.error)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        for key in ["storeID", "siteID", "pendingChanges"] { #expect(object[key] is NSNull, "\(key)") }
        #expect(try runOstore(["status", "--db", path]).output.contains("store id:         none (no metadatabase"))
        #expect(!FileManager.default.fileExists(atPath: Metadatabase.path(forDatabaseAt: path)))
    }

    @Test func helpDocumentsTheJSONValueEncoding() throws {
        let run = try runOstore(["log", "--help"])
        #expect(run.status == 0)
        #expect(run.output.hasPrefix("usage: ostore log --db PATH [--pending] [--json] [--limit N]"))
        for text in [#"{"integer": "digits"}"#, #"{"blob": "base64"}"#, "--pending", "--limit N"] {
            #expect(run.output.contains(text))
        }
        #expect(try runOstore(["--help"]).output.contains("  log  "))
    }
}
