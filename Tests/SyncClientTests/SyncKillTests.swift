import Foundation
import OfflineStore
import RemindersModel
import SyncServer
import TestSupport
import Testing

/// `reminders … sync` killed with SIGKILL at random moments, again and again: every later sync
/// must complete with nothing lost and nothing stored twice.
@Suite("Sync killed at random moments")
struct SyncKillTests {
    @Test func killingSyncsAtRandomMomentsLosesAndDuplicatesNothing() throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        let token = try makeDataset(server, "reminders")
        let reminders = try builtProduct("reminders")
        let alice = directory.path("alice.sqlite")
        let bob = directory.path("bob.sqlite")

        // Several push batches and pull pages' worth of changes.
        let rows = 2_500
        do {
            let db = try Database(path: alice)
            _ = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            try db.transaction { db in
                try db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
                for index in 0..<rows {
                    try db.execute(
                        "INSERT INTO reminders (id, title, listID) VALUES (\(UUID().uuidString), \("r\(index)"), 'L')")
                }
            }
            try db.close()
        }
        func sync(_ path: String) throws -> Process {
            try startSync(reminders, path, through: server.baseURL, token: token)
        }
        var generator = SystemRandomNumberGenerator()
        for round in 0..<24 {
            // Alternate the two devices so kills land in pushes, snapshots and log pulls.
            let process = try sync(round % 3 == 2 ? bob : alice)
            usleep(UInt32.random(in: 20_000...400_000, using: &generator))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        for path in [alice, bob, alice] {
            let process = try sync(path)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0)
        }
        // Every change stored once: the insert of each row and of the list, nothing more.
        #expect(try server.storage().datasets().first?.changes == Int64(rows + 1))
        for path in [alice, bob] {
            let db = try Database(path: path)
            #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") == rows)
            #expect(try db.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
            try db.close()
            let meta = try Database(path: path + "-ostore-meta")
            #expect(try meta.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
            try meta.close()
        }
    }

    /// The test above kills at random moments; this one aims at the apply: a `reminders … sync`
    /// is killed right after a pulled page has reached it (the proxy tells when), at several
    /// delays, in the snapshot and in the log phase. Each apply is all or nothing; a later sync
    /// completes with every change applied once and nothing pushed back.
    @Test func killedWhileApplyingAPulledPageLosesAndDuplicatesNothing() throws {
        let setup = try ProxiedServer()
        let (directory, server, proxy) = (setup.directory, setup.server, setup.proxy)
        defer { proxy.stop() }
        let alice = directory.path("alice.sqlite")
        let bob = directory.path("bob.sqlite")
        let rows = 2_500
        func edit(_ sql: String) throws { try SyncKillTests.edit(alice, sql) }
        try edit(listWithReminders(rows))
        let client = Locked<Int32>(0)
        let delay = Locked<UInt32>(0)
        proxy.afterAnswering = { request in
            // A page of changes (not the hello, not an empty page) has just been handed over.
            guard request.path.hasSuffix("/pull") else { return }
            let target = client.withLock { pid in
                defer { pid = 0 }
                return pid
            }
            guard target != 0 else { return }
            usleep(delay.value)
            kill(target, SIGKILL)
        }
        var killedMidway = 0
        for phase in ["snapshot", "log"] {
            if phase == "log" { try edit("UPDATE reminders SET isDone = 1") }
            #expect(try setup.sync(alice, through: server.baseURL).waitedForExit() == 0)
            for milliseconds in [0, 0, 10, 40, 80, 150] as [UInt32] {
                delay.value = milliseconds * 1_000
                let process = try setup.sync(bob, through: proxy.baseURL)
                client.value = process.processIdentifier
                process.waitUntilExit()
                if process.terminationReason == .uncaughtSignal { killedMidway += 1 }
                let db = try Database(path: bob)
                #expect(try db.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
                #expect(try db.fetchAll("PRAGMA foreign_key_check").isEmpty)
                try db.close()
            }
            client.value = 0
            #expect(try setup.sync(bob, through: proxy.baseURL).waitedForExit() == 0)
        }
        #expect(killedMidway >= 2)
        // Bob pushed nothing back (applying records nothing), and holds every change once.
        #expect(try server.storage().datasets().first?.changes == Int64(2 * rows + 1))
        #expect(try server.changesStoredTwice(dataset: "reminders").isEmpty)
        let db = try Database(path: bob)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM reminders WHERE isDone = 1") == rows)
        #expect(try log.pendingCount(db) == 0)
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") == 0)
        try db.close()
    }

    /// The tests above sync at most one page at a time. Here a dataset of three pages (pages
    /// of 5,000) is pulled, and `reminders … sync` is killed right after the server handed over
    /// the first or the second page: with the read-ahead, page 2 is asked for (and read) while
    /// page 1 is applied, so the kill lands with one page being applied and the next arriving.
    /// Each later sync resumes at the first page whose cursor was not saved; nothing is lost,
    /// nothing pushed back, nothing stored twice.
    @Test func killedWhileTheNextPageArrivesLosesAndDuplicatesNothing() throws {
        let setup = try ProxiedServer()
        let (directory, server, proxy) = (setup.directory, setup.server, setup.proxy)
        defer { proxy.stop() }
        let alice = directory.path("alice.sqlite")
        let rows = 12_000
        try Self.edit(alice, listWithReminders(rows))
        #expect(try setup.sync(alice, through: server.baseURL).waitedForExit() == 0)
        // The client to kill, and after which pull answer of its sync.
        let target = Locked<(pid: Int32, afterPage: Int, pages: Int)>((0, 0, 0))
        let delay = Locked<UInt32>(0)
        proxy.afterAnswering = { request in
            guard request.path.hasSuffix("/pull") else { return }
            let pid = target.withLock { target in
                target.pages += 1
                guard target.pid != 0, target.pages == target.afterPage else { return Int32(0) }
                defer { target.pid = 0 }
                return target.pid
            }
            guard pid != 0 else { return }
            usleep(delay.value)
            kill(pid, SIGKILL)
        }
        // Each round is a new device, so every kill finds three pages to pull.
        var killed = 0
        let rounds: [(afterPage: Int, milliseconds: UInt32)] = [(1, 0), (2, 0), (1, 40), (2, 40)]
        for (round, plan) in rounds.enumerated() {
            let bob = directory.path("bob\(round).sqlite")
            delay.value = plan.milliseconds * 1_000
            let process = try setup.sync(bob, through: proxy.baseURL)
            target.value = (process.processIdentifier, plan.afterPage, 0)
            process.waitUntilExit()
            if process.terminationReason == .uncaughtSignal { killed += 1 }
            target.value = (0, 0, 0)
            #expect(try setup.sync(bob, through: proxy.baseURL).waitedForExit() == 0)
            let db = try Database(path: bob)
            let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            #expect(try db.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
            #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM reminders") == rows)
            #expect(try log.pendingCount(db) == 0)
            #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_stash") == 0)
            try db.close()
        }
        #expect(killed >= 3)
        // No device pushed anything back (applying records nothing), and nothing is stored twice.
        #expect(try server.storage().datasets().first?.changes == Int64(rows + 1))
        #expect(try server.changesStoredTwice(dataset: "reminders").isEmpty)
    }

    /// A large offline backlog is folded from the journal into the keyed log a step at a time while
    /// the first batches are pushed (`ChangeJournal.foldAhead`), each step its own transaction, and
    /// only as far as the next batch needs. Here `reminders … sync` is killed once one of its first
    /// pushes has reached the server: in the first round at the first push (one step committed, the
    /// rest of the journal not folded yet), later at the first or second (of at least three) after
    /// a random delay (inside a later step's transaction, between steps, or in a push). The store
    /// is edited between the kills (updates of rows already pushed and of rows still in the
    /// journal, inserts, deletes), so each new sync starts from a journal a killed one left partly
    /// folded. At the end a device that pulls everything holds exactly Alice's rows, and the server
    /// holds no change twice.
    @Test func killedWhileFoldingALargeBacklogLosesAndDuplicatesNothing() throws {
        let setup = try ProxiedServer()
        let (directory, server, proxy) = (setup.directory, setup.server, setup.proxy)
        defer { proxy.stop() }
        let alice = directory.path("alice.sqlite")
        let bob = directory.path("bob.sqlite")
        // Push batches of 5,000: a journal of more than 10,000 entries is folded in steps.
        let rows = 24_000
        try Self.edit(alice, listWithReminders(rows))
        // The client to kill, at which push of its sync, and after how long.
        let target = Locked<(pid: Int32, atPush: Int, pushes: Int, delay: UInt32)>((0, 0, 0, 0))
        proxy.afterForwarding = { request in
            guard request.path.hasSuffix("/push") else { return }
            let (pid, delay) = target.withLock { target in
                target.pushes += 1
                guard target.pid != 0, target.pushes == target.atPush else { return (Int32(0), UInt32(0)) }
                defer { target.pid = 0 }
                return (target.pid, target.delay)
            }
            guard pid != 0 else { return }
            usleep(delay)
            kill(pid, SIGKILL)
        }
        func journalCount() throws -> Int {
            let meta = try Database(path: alice + "-ostore-meta")
            defer { try? meta.close() }
            return try meta.fetchValue(Int.self, "SELECT count(*) FROM ostore_journal") ?? 0
        }
        var generator = SystemRandomNumberGenerator()
        var killed = 0
        var leftPartlyFolded = 0
        for round in 0..<10 {
            let journalBefore = try journalCount()
            let process = try setup.sync(alice, through: proxy.baseURL)
            target.value =
                round == 0
                ? (process.processIdentifier, 1, 0, 0)
                : (
                    process.processIdentifier, Int.random(in: 1...2, using: &generator), 0,
                    UInt32.random(in: 0...40_000, using: &generator)
                )
            process.waitUntilExit()
            target.value = (0, 0, 0, 0)
            if process.terminationReason == .uncaughtSignal { killed += 1 }
            let journalAfter = try journalCount()
            if journalAfter > 0 && journalAfter < journalBefore { leftPartlyFolded += 1 }
            // Every other row retitled (pushed or not), a few deleted, new ones added.
            let first = Int.random(in: 1...rows, using: &generator)
            try Self.edit(
                alice,
                """
                UPDATE reminders SET title = 'round \(round) ' || id WHERE rowid % 2 = \(round % 2);
                DELETE FROM reminders WHERE id IN ('R\(first)', 'R\((first + 7) % rows + 1)');
                INSERT INTO reminders (id, title, listID) VALUES ('N\(round)', 'new \(round)', 'L');
                """)
        }
        #expect(killed == 10)
        #expect(leftPartlyFolded >= 1)
        for path in [alice, bob] {
            #expect(try setup.sync(path, through: server.baseURL).waitedForExit() == 0)
        }
        #expect(try server.changesStoredTwice(dataset: "reminders").isEmpty)
        var contents: [String] = []
        for path in [alice, bob] {
            let db = try Database(path: path)
            let log = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
            #expect(try db.fetchValue(String.self, "PRAGMA integrity_check") == "ok")
            #expect(try log.pendingCount(db) == 0)
            #expect(try log.coversEveryChange(db))
            contents.append(
                try db.fetchValue(
                    String.self,
                    "SELECT group_concat(id || '=' || title, ',') FROM (SELECT id, title FROM reminders ORDER BY id)")
                    ?? "")
            try db.close()
        }
        #expect(contents[0] == contents[1])
        #expect(contents[0].contains("round 9 "))
    }

    /// Runs `sql` on the Reminders store at `path`, through the store (its writes recorded).
    fileprivate static func edit(_ path: String, _ sql: String) throws {
        let db = try Database(path: path)
        _ = try ChangeLog.open(db, migrator: try Migrator(plan: RemindersMigrationPlan.self))
        try db.executeScript(sql)
        try db.close()
    }
}

/// A live server with a `reminders` dataset, a fault proxy in front of it, and the built
/// `reminders` CLI, in a temporary directory.
private struct ProxiedServer {
    let directory: TemporaryDirectory
    let server: LiveServer
    let token: String
    let proxy: FaultProxy
    let reminders: URL

    init() throws {
        directory = try TemporaryDirectory()
        server = try LiveServer(dataDirectory: URL(fileURLWithPath: directory.path("data")))
        token = try makeDataset(server, "reminders")
        proxy = try FaultProxy(upstreamPort: server.port)
        reminders = try builtProduct("reminders")
    }

    /// `reminders … sync` of the store at `path` through `url` (the proxy's or the server's), started.
    func sync(_ path: String, through url: URL) throws -> Process {
        try startSync(reminders, path, through: url, token: token)
    }
}

/// A list and `rows` reminders in it, `R1`…, as one script.
private func listWithReminders(_ rows: Int) -> String {
    """
    INSERT INTO remindersLists (id, name) VALUES ('L', 'Home');
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(rows))
    INSERT INTO reminders (id, title, listID) SELECT 'R' || i, 'r' || i, 'L' FROM n;
    """
}

/// `reminders --db PATH sync --server URL` started, the token in the environment, its output discarded.
private func startSync(_ reminders: URL, _ path: String, through url: URL, token: String) throws -> Process {
    let process = Process()
    process.executableURL = reminders
    process.arguments = ["--db", path, "sync", "--server", url.absoluteString]
    process.environment = ["OSTORE_TOKEN": token]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    return process
}

extension Process {
    fileprivate func waitedForExit() -> Int32 {
        waitUntilExit()
        return terminationStatus
    }
}
