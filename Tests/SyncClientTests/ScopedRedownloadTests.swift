import Foundation
import OfflineStore
import SyncClient
import SyncServer
import TestSupport
import Testing

/// A device that held the whole dataset before it got scope rules: its cursor is refused, it
/// downloads its user's part, and the end of that download removes what it held of the others'
/// rows, without recording a delete, even when the download spans several syncs.
@Suite("Downloading a scope again")
struct ScopedRedownloadTests {
    /// The server, its operator's storage, and Alice's and Bob's devices, each holding both
    /// users' lists and reminders, synced before the dataset has rules.
    struct Fixture {
        let directory: TemporaryDirectory
        let server: LiveServer
        let admin: any SyncStorage
        let operatorDevice: SyncPeer
        let bob: SyncPeer

        init(_ backend: StorageBackend) throws {
            directory = try TemporaryDirectory()
            server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"), backend: backend)
            let admin = try ScopedSyncTests.admin(of: server)
            self.admin = admin
            try admin.createDataset(named: "family")
            func token(_ subject: String?) throws -> String {
                try admin.createToken(dataset: "family", readOnly: false, identity: TokenIdentity(subject: subject))
                    .secret
            }
            operatorDevice = try SyncPeer(
                name: "operator", path: directory.path("operator.sqlite"), server: server.baseURL, dataset: "family",
                token: try token(nil))
            bob = try SyncPeer(
                name: "bob", path: directory.path("bob.sqlite"), server: server.baseURL, dataset: "family",
                token: try token("bob"))
            try bob.db.execute("INSERT INTO remindersLists (id, name) VALUES ('LB', 'bob')")
            try bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RB', 'Tea', 'LB')")
            _ = try bob.engine.sync()
        }

        func token(_ subject: String?) throws -> String {
            try admin.createToken(dataset: "family", readOnly: false, identity: TokenIdentity(subject: subject)).secret
        }

        /// Alice's device, with its list and reminder synced and Bob's pulled; with `appStep`, the
        /// app's step runs after each page applied.
        func alice(
            through url: URL? = nil, pageSize: Int = 1_000, retry: RetryPolicy = SyncPeer.immediateRetries,
            appStep: Bool = false
        ) throws -> SyncPeer {
            let alice = try SyncPeer(
                name: "alice", path: directory.path("alice.sqlite"), server: url ?? server.baseURL, dataset: "family",
                token: try token("alice"), pageSize: pageSize, retry: retry, derivesReleaseTwo: appStep)
            try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('LA', 'alice')")
            try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RA', 'Milk', 'LA')")
            _ = try alice.engine.sync()
            #expect(try alice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LA", "LB"])
            return alice
        }

        func setRules() throws {
            try admin.setScopeRules(ScopedSyncTests.rules, dataset: "family")
        }
    }

    @Test(arguments: StorageBackend.allCases)
    func aDownloadAfterTheCursorIsRefusedRemovesTheRowsTheScopeNoLongerGives(_ backend: StorageBackend) throws {
        let fixture = try Fixture(backend)
        let alice = try fixture.alice()
        try fixture.setRules()
        // Made offline before the download: pushed by the same sync, and kept.
        try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RA2', 'Eggs', 'LA')")

        let report = try alice.engine.sync()
        #expect(report.redownloaded)
        #expect(report.removed == 2)
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LA"])
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RA", "RA2"])
        #expect(try alice.log.pendingCount(alice.db) == 0)
        #expect(try alice.log.syncState(alice.db, endpoint: alice.engine.endpoint).downloadReplacesRows == false)
        // No delete was recorded: Bob's rows are his still, on the server and his device.
        #expect(try alice.engine.sync().pushed == 0)
        _ = try fixture.bob.engine.sync()
        #expect(try fixture.bob.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RB"])
        _ = try fixture.operatorDevice.engine.sync()
        #expect(
            try fixture.operatorDevice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id")
                == ["RA", "RA2", "RB"])
        withExtendedLifetime(fixture.server) {}
    }

    /// The download's second page is cut off: the sync fails with the first page applied, and the
    /// next sync resumes the download, which still replaces what the store held (the rows of the
    /// first page stay); with and without the app's step after each page.
    @Test(arguments: StorageBackend.allCases, [false, true])
    func aReplacingDownloadCutOffMidwayResumesAndRemovesOnlyWhatNoPageGave(_ backend: StorageBackend, appStep: Bool)
        throws
    {
        let fixture = try Fixture(backend)
        try fixture.bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RB2', 'Jam', 'LB')")
        _ = try fixture.bob.engine.sync()
        let proxy = try FaultProxy(upstreamPort: fixture.server.port)
        defer { proxy.stop() }
        var once = RetryPolicy(maximumAttempts: 1)
        once.sleep = { _ in }
        let alice = try fixture.alice(through: proxy.baseURL, pageSize: 1, retry: once, appStep: appStep)
        try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RA2', 'Eggs', 'LA')")
        _ = try alice.engine.sync()
        try fixture.setRules()
        let pulls = Locked(0)
        proxy.plan = { request in
            guard request.path.hasSuffix("/pull") else { return .pass }
            // The refused cursor's pull and the download's first page pass; no later page does.
            return pulls.withLock { count in
                count += 1
                return count >= 3 ? .resetBeforeForwarding : .pass
            }
        }

        #expect(throws: SyncError.self) { try alice.engine.sync() }
        let cut = try alice.log.syncState(alice.db, endpoint: alice.engine.endpoint)
        #expect(cut.downloadReplacesRows && cut.cursor != nil)
        #expect(
            try alice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RA", "RA2", "RB", "RB2"])

        proxy.plan = { _ in .pass }
        let report = try alice.engine.sync()
        #expect(!report.redownloaded)
        #expect(report.removed == 3)
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LA"])
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RA", "RA2"])
        #expect(try alice.log.syncState(alice.db, endpoint: alice.engine.endpoint).downloadReplacesRows == false)
        #expect(try alice.db.fetchValue(Int.self, "SELECT count(*) FROM ostore_meta.ostore_downloaded") == 0)
        // Later pulls are the scope's moves again: Bob's next reminder does not reach Alice.
        try fixture.bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RB3', 'Oats', 'LB')")
        _ = try fixture.bob.engine.sync()
        #expect(try alice.engine.sync().removed == 0)
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RA", "RA2"])
        withExtendedLifetime(fixture.server) {}
    }
}

extension ScopedRedownloadTests {
    /// The app's step fails once, after the page that ends the download removed Bob's rows: the
    /// page comes again at the next sync (its cursor was not saved) and applies as any page does,
    /// removing nothing of the rows the download's earlier pages gave.
    @Test(arguments: StorageBackend.allCases)
    func anAppStepFailingAfterTheDownloadEndedRemovesNothingMoreWhenThePageComesAgain(_ backend: StorageBackend)
        throws
    {
        let fixture = try Fixture(backend)
        let alice = try fixture.alice(pageSize: 1)
        try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RA2', 'Eggs', 'LA')")
        _ = try alice.engine.sync()
        try fixture.setRules()
        let failures = Locked(0)
        alice.engine.afterApplyingChanges = { db in
            // Once Bob's list is gone, the first time.
            guard try db.fetchValue(Int.self, "SELECT count(*) FROM remindersLists") == 1, failures.value == 0
            else { return }
            failures.value += 1
            throw SyncError(.store, "the app's step failed")
        }

        #expect(throws: SyncError.self) { try alice.engine.sync() }
        #expect(failures.value == 1)
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LA"])
        let report = try alice.engine.sync()
        #expect(report.removed == 0)
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LA"])
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RA", "RA2"])
        withExtendedLifetime(fixture.server) {}
    }
}
