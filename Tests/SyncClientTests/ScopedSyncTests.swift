import Foundation
import OfflineStore
import RemindersModel
import SyncClient
import SyncProtocol
import SyncServer
import TestSupport
import Testing

/// Devices of two users on a dataset served under scope rules set with `ostore-server rules set`
/// while the server runs: each pulls only its user's lists and their reminders, and a change a
/// user may not write is refused by the server and kept on the device with the reason.
@Suite("Scoped sync between devices")
struct ScopedSyncTests {
    /// A list is its namesake's; a reminder is read and written by whoever's list it is on.
    static let rules = """
        {"tables": {
          "remindersLists": {
            "read": [{"column": "name", "equals": "subject"}], "write": [{"column": "name", "equals": "subject"}]
          },
          "reminders": {
            "read": [{"column": "listID", "in": {"table": "remindersLists", "select": "id", "where": "name"}}],
            "write": [{"column": "listID", "in": {"table": "remindersLists", "select": "id", "where": "name"}}]
          },
          "tags": {"read": ["everyone"], "write": ["everyone"]},
          "reminderTags": {"read": [{"parent": "reminders"}], "write": [{"parent": "reminders"}]},
          "listMembers": {"read": [{"parent": "remindersLists"}], "write": [{"parent": "remindersLists"}]}
        }}
        """

    /// The sample's rules (`Samples/reminders-rules.json`, which `make demo` sets) fit release 2.1's
    /// schema, and not 2.0's, which has neither owners nor members.
    /// The operator's own access to `server`'s storage, beside the running server.
    static func admin(of server: LiveServer) throws -> any SyncStorage {
        switch server.backend {
        case .sqlite: try SQLiteSyncStorage(directory: server.dataDirectory, folds: false)
        case .postgres: try PostgresSyncStorage(url: server.postgresURL!, connections: 2)
        }
    }

    /// What names `server`'s storage to an `ostore-server` command.
    static func storageArguments(of server: LiveServer) -> [String] {
        server.postgresURL.map { ["--postgres", $0] } ?? ["--data", server.dataDirectory.path]
    }

    @Test func theSamplesRulesFitTheReleaseThatSharesLists() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/reminders-rules.json")
        let rules = try ScopeRules.read(from: try Data(contentsOf: file))
        #expect(rules.problems(against: SchemaDefinition(try RemindersSchemaV2_1.snapshot())).isEmpty)
        let before = rules.problems(against: SchemaDefinition(try RemindersSchemaV2.snapshot())).map(\.description)
        #expect(before.contains { $0.contains("listMembers") })
        #expect(before.contains { $0.contains("ownerID") })
    }

    @Test(arguments: StorageBackend.allCases)
    func eachUserSyncsTheirPartAndAChangeOutsideItIsKeptAsRefused(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let data = directory.url.appendingPathComponent("data")
        let server = try LiveServer(dataDirectory: data, backend: backend)
        let admin = try Self.admin(of: server)
        try admin.createDataset(named: "family")
        func device(_ user: String, file: String? = nil) throws -> SyncPeer {
            let token = try admin.createToken(
                dataset: "family", readOnly: false, identity: TokenIdentity(subject: user))
            return try SyncPeer(
                name: user, path: directory.path(file ?? "\(user).sqlite"), server: server.baseURL, dataset: "family",
                token: token.secret)
        }
        let alice = try device("alice")
        let bob = try device("bob")
        // The first hello brings the schema's definition, which the rules are checked against.
        _ = try alice.engine.sync()
        try Self.rules.write(toFile: directory.path("rules.json"), atomically: true, encoding: .utf8)
        let set = try run(
            try builtProduct("ostore-server").path,
            ["rules", "set", "--dataset", "family", directory.path("rules.json")] + Self.storageArguments(of: server))
        #expect(set.status == 0, "\(String(decoding: set.error, as: UTF8.self))")

        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('LA', 'alice')")
        try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RA', 'Milk', 'LA')")
        try bob.db.execute("INSERT INTO remindersLists (id, name) VALUES ('LB', 'bob')")
        try bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RB', 'Tea', 'LB')")
        _ = try alice.engine.sync()
        // A list made and a reminder put on it in one push.
        #expect(try bob.engine.sync().refusedOutgoing == 0)
        // Bob would hand his list to Alice: refused, and kept on his device.
        try bob.db.execute("UPDATE remindersLists SET name = 'alice' WHERE id = 'LB'")
        let report = try bob.engine.sync()
        #expect(report.refusedOutgoing == 1)
        let refused = try bob.log.refusedOutgoingChanges(bob.db)
        #expect(refused.map(\.code) == ["out_of_scope"])
        #expect(refused.first?.change.contains("LB") == true)
        #expect(refused.first?.reason.contains("would put the row outside the writer's write scope") == true)
        #expect(try bob.log.pendingCount(bob.db) == 0)

        _ = try alice.engine.sync()
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RA"])
        #expect(try alice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LA"])
        #expect(try bob.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RB"])
        #expect(try bob.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id") == ["LB"])
        // A device downloading Bob's scope anew receives his rows alone.
        let bobsOther = try device("bob", file: "bob-laptop.sqlite")
        _ = try bobsOther.engine.sync()
        #expect(try bobsOther.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id") == ["RB"])
        #expect(try bobsOther.db.fetchAll(String.self, "SELECT name FROM remindersLists") == ["bob"])
        let log = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(log.contains(#""event":"scopeRules""#))
        withExtendedLifetime(server) {}
    }

    /// Bob's list is handed to Carol by an operator's device (a token without a subject): Bob's
    /// edit made offline is refused and kept, his device loses the list and its reminder at the
    /// next sync without pushing a delete, and both come back whole, as the server holds them,
    /// when the list is his again.
    @Test(arguments: StorageBackend.allCases)
    func rowsLeavingTheScopeAreRemovedWithoutADeleteAndComeBackWhole(_ backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let data = directory.url.appendingPathComponent("data")
        let server = try LiveServer(dataDirectory: data, backend: backend)
        let admin = try Self.admin(of: server)
        try admin.createDataset(named: "family")
        func device(_ name: String, subject: String?) throws -> SyncPeer {
            let token = try admin.createToken(
                dataset: "family", readOnly: false, identity: TokenIdentity(subject: subject))
            return try SyncPeer(
                name: name, path: directory.path("\(name).sqlite"), server: server.baseURL, dataset: "family",
                token: token.secret)
        }
        let operatorDevice = try device("operator", subject: nil)
        let bob = try device("bob", subject: "bob")
        _ = try operatorDevice.engine.sync()
        try Self.rules.write(toFile: directory.path("rules.json"), atomically: true, encoding: .utf8)
        let set = try run(
            try builtProduct("ostore-server").path,
            ["rules", "set", "--dataset", "family", directory.path("rules.json")] + Self.storageArguments(of: server))
        #expect(set.status == 0, "\(String(decoding: set.error, as: UTF8.self))")
        try bob.db.execute("INSERT INTO remindersLists (id, name) VALUES ('LB', 'bob')")
        try bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES ('RB', 'Tea', 'LB')")
        _ = try bob.engine.sync()
        _ = try operatorDevice.engine.sync()

        try operatorDevice.db.execute("UPDATE remindersLists SET name = 'carol' WHERE id = 'LB'")
        _ = try operatorDevice.engine.sync()
        try bob.db.execute("UPDATE reminders SET title = 'Green tea' WHERE id = 'RB'")
        let report = try bob.engine.sync()
        #expect(report.refusedOutgoing == 1)
        #expect(report.removed == 2)
        #expect(try bob.log.refusedOutgoingChanges(bob.db).map(\.code) == ["out_of_scope"])
        #expect(try bob.db.fetchAll(String.self, "SELECT id FROM remindersLists").isEmpty)
        #expect(try bob.db.fetchAll(String.self, "SELECT id FROM reminders").isEmpty)
        #expect(try bob.log.pendingCount(bob.db) == 0)
        // Nothing of Bob's removal reached the server: the operator still sees both rows.
        _ = try bob.engine.sync()
        _ = try operatorDevice.engine.sync()
        #expect(try operatorDevice.db.fetchAll(String.self, "SELECT title FROM reminders") == ["Tea"])

        try operatorDevice.db.execute("UPDATE remindersLists SET name = 'bob' WHERE id = 'LB'")
        _ = try operatorDevice.engine.sync()
        let back = try bob.engine.sync()
        #expect(back.removed == 0)
        #expect(try bob.db.fetchAll(String.self, "SELECT name FROM remindersLists") == ["bob"])
        #expect(try bob.db.fetchAll(String.self, "SELECT title FROM reminders") == ["Tea"])
        #expect(try bob.log.pendingCount(bob.db) == 0)
        withExtendedLifetime(server) {}
    }

    /// The same rules, with every list and reminder read by everyone (and written as before).
    static let everyoneReads =
        rules
        .replacingOccurrences(
            of: #""read": [{"column": "name", "equals": "subject"}]"#, with: #""read": ["everyone"]"#
        )
        .replacingOccurrences(
            of: #""read": [{"column": "listID", "in": {"table": "remindersLists", "select": "id", "where": "name"}}]"#,
            with: #""read": ["everyone"]"#)

    /// Lists read by their namesake and their members (`listMembers`), reminders through their
    /// list; written as in ``rules``.
    static let sharedListRules = """
        {"tables": {
          "remindersLists": {
            "read": [
              {"column": "name", "equals": "subject"},
              {"column": "id", "in": {"table": "listMembers", "select": "listID", "where": "userID"}}
            ],
            "write": [{"column": "name", "equals": "subject"}]
          },
          "reminders": {
            "read": [{"parent": "remindersLists"}],
            "write": [{"column": "listID", "in": {"table": "remindersLists", "select": "id", "where": "name"}}]
          },
          "tags": {"read": ["everyone"], "write": ["everyone"]},
          "reminderTags": {"read": [{"parent": "reminders"}], "write": [{"parent": "reminders"}]},
          "listMembers": {"read": [{"parent": "remindersLists"}], "write": [{"parent": "remindersLists"}]}
        }}
        """

    /// ``sharedListRules`` with every list read by everyone.
    static let everyoneReadsSharedLists = sharedListRules.replacingOccurrences(
        of: """
            "read": [
                  {"column": "name", "equals": "subject"},
                  {"column": "id", "in": {"table": "listMembers", "select": "listID", "where": "userID"}}
                ]
            """, with: #""read": ["everyone"]"#)

    /// The random test's rules where everyone reads are rules, and let everyone read lists.
    @Test func theSharedListRulesWhereEveryoneReadsAreRules() throws {
        for text in [Self.everyoneReads, Self.everyoneReadsSharedLists] {
            #expect(text != Self.rules && text != Self.sharedListRules)
            _ = try ScopeRules.read(from: Data(text.utf8))
        }
    }

    /// An operator hands lists from user to user, shares them with users and takes them back,
    /// adds, edits and deletes reminders on them, while each user's device adds and edits
    /// reminders on the lists it holds as its user's, all syncing at random moments, and the rules
    /// now and then let everyone read every list and then again not (``sharedListRules`` at the
    /// end): once all have synced, each device holds exactly its user's part of what the server
    /// holds (the lists it owns or is a member of, their reminders and memberships), with its
    /// values, less the rows of changes the server refused it (kept on the device, as for every
    /// refusal). A rules change moves each device's cursor on, as any change does.
    @Test(arguments: StorageBackend.allCases, 0..<4)
    func randomSyncsUnderMovingScopesLeaveEachDeviceWithItsUsersPart(_ backend: StorageBackend, seed: UInt64)
        throws
    {
        try Self.syncRandomlyUnderMovingScopes(backend, seed: seed, throughFaults: false)
    }

    /// The same through a network that resets, truncates, stalls and replays requests (a sync
    /// that fails is tried again later): the faults change nothing of what each device ends with.
    @Test(arguments: StorageBackend.allCases, 0..<2)
    func randomSyncsUnderMovingScopesThroughFaultsLeaveEachDeviceWithItsUsersPart(
        _ backend: StorageBackend, seed: UInt64
    ) throws {
        try Self.syncRandomlyUnderMovingScopes(backend, seed: seed, throughFaults: true)
    }

    static func syncRandomlyUnderMovingScopes(_ backend: StorageBackend, seed: UInt64, throughFaults: Bool) throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"), backend: backend)
        let admin = try Self.admin(of: server)
        try admin.createDataset(named: "family")
        let users = ["alice", "bob", "carol"]
        let proxy = try FaultProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        func breakTheNetwork() {
            guard throughFaults else { return }
            let faults = Locked(SeededGenerator(seed: seed ^ 0x5eed))
            proxy.plan = { _ in
                faults.withLock { random in
                    // One request in five; a stall costs the client's low-speed timeout, so rarer.
                    switch random.next() % 40 {
                    case 0, 1: .resetBeforeForwarding
                    case 2, 3: .resetAfterForwarding
                    case 4, 5: .truncate
                    case 6, 7: .replay
                    case 8: .stall
                    default: .pass
                    }
                }
            }
        }
        let transport = HTTPClient.Configuration(connectTimeout: .seconds(2), lowSpeedTime: .seconds(1))
        func device(_ name: String, subject: String?) throws -> SyncPeer {
            let token = try admin.createToken(
                dataset: "family", readOnly: false, identity: TokenIdentity(subject: subject))
            return try SyncPeer(
                name: name, path: directory.path("\(name).sqlite"), server: proxy.baseURL, dataset: "family",
                token: token.secret, transport: transport, pageSize: 7)
        }
        /// A sync that may fail at a fault; the next one goes on from what this one stored.
        func sync(_ peer: SyncPeer) throws {
            if throughFaults {
                _ = try? peer.engine.sync()
            } else {
                _ = try peer.engine.sync()
            }
        }
        let operatorDevice = try device("operator", subject: nil)
        let devices = try users.map { try device($0, subject: $0) }
        _ = try operatorDevice.engine.sync()
        try admin.setScopeRules(Self.sharedListRules, dataset: "family")
        breakTheNetwork()
        var everyoneReadsNow = false
        var random = SeededGenerator(seed: seed)
        func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[Int(random.next() % UInt64(items.count))] }
        var made = 0
        let rulesChanges = Set((0..<3).map { _ in 5 + Int(random.next() % 50) })
        for step in 0..<60 {
            made += 1
            let lists = try operatorDevice.db.fetchAll(String.self, "SELECT id FROM remindersLists ORDER BY id")
            let reminders = try operatorDevice.db.fetchAll(String.self, "SELECT id FROM reminders ORDER BY id")
            switch random.next() % 10 {
            case 0, 1:
                try operatorDevice.db.execute(
                    "INSERT INTO remindersLists (id, name) VALUES (\("L\(made)"), \(pick(users)!))")
            case 2:
                if let list = pick(lists) {
                    try operatorDevice.db.execute("UPDATE remindersLists SET name = \(pick(users)!) WHERE id = \(list)")
                }
            case 3, 4:
                if let list = pick(lists) {
                    try operatorDevice.db.execute(
                        "INSERT INTO reminders (id, title, listID) VALUES (\("R\(made)"), \("t\(step)"), \(list))")
                }
            case 5:
                if let reminder = pick(reminders) {
                    try operatorDevice.db.execute("DELETE FROM reminders WHERE id = \(reminder)")
                }
            case 6:
                if let list = pick(lists) {
                    try operatorDevice.db.execute(
                        "INSERT OR IGNORE INTO listMembers (listID, userID) VALUES (\(list), \(pick(users)!))")
                }
            case 7:
                let members = try Self.rows(operatorDevice.db, "SELECT listID, userID FROM listMembers")
                if let member = pick(members) {
                    try operatorDevice.db.execute(
                        "DELETE FROM listMembers WHERE listID = \(member[0]) AND userID = \(member[1])")
                }
            default:
                // A user's device writes on a list it holds as its user's.
                let index = Int(random.next() % UInt64(users.count))
                let peer = devices[index]
                let own = try peer.db.fetchAll(
                    String.self, "SELECT id FROM remindersLists WHERE name = \(users[index]) ORDER BY id")
                let ownReminders = try peer.db.fetchAll(
                    String.self,
                    "SELECT r.id FROM reminders AS r JOIN remindersLists AS l ON l.id = r.listID WHERE l.name = \(users[index])"
                )
                if random.next() % 2 == 0, let reminder = pick(ownReminders) {
                    try peer.db.execute("UPDATE reminders SET title = \("e\(step)") WHERE id = \(reminder)")
                } else if let list = pick(own) {
                    try peer.db.execute(
                        "INSERT INTO reminders (id, title, listID) VALUES (\("\(users[index])-\(made)"), \("u\(step)"), \(list))"
                    )
                }
            }
            if rulesChanges.contains(step) {
                everyoneReadsNow.toggle()
                try admin.setScopeRules(
                    everyoneReadsNow ? Self.everyoneReadsSharedLists : Self.sharedListRules, dataset: "family")
            }
            if random.next() % 3 == 0 { try sync(operatorDevice) }
            if random.next() % 3 == 0, let peer = pick(devices) { try sync(peer) }
        }
        // The end is under the scoped rules, where who holds what depends on owners and members.
        if everyoneReadsNow {
            everyoneReadsNow = false
            try admin.setScopeRules(Self.sharedListRules, dataset: "family")
        }
        if throughFaults { #expect(proxy.requestCount > proxy.counts[.pass] ?? 0, "no request met a fault") }
        proxy.plan = { _ in .pass }
        for _ in 0..<2 {
            _ = try operatorDevice.patientEngine.sync()
            for peer in devices { _ = try peer.patientEngine.sync() }
        }
        let allLists = try Self.rows(operatorDevice.db, "SELECT id, name FROM remindersLists")
        let allReminders = try Self.rows(operatorDevice.db, "SELECT id, listID, title FROM reminders")
        let allMembers = try Self.rows(operatorDevice.db, "SELECT listID, userID FROM listMembers")
        for (index, peer) in devices.enumerated() {
            let user = users[index]
            let refused = Set(
                try peer.log.refusedOutgoingChanges(peer.db).map { record in
                    let change = try JSONDecoder().decode(Change.self, from: Data(record.change.utf8))
                    return "\(change.key["id"].map { "\($0)" } ?? "")"
                })
            let shared = Set(allMembers.filter { $0[1] == user }.map { $0[0] })
            let ownLists = allLists.filter { everyoneReadsNow || $0[1] == user || shared.contains($0[0]) }
            let listIDs = Set(ownLists.map { $0[0] })
            let ownReminders = allReminders.filter { everyoneReadsNow || listIDs.contains($0[1]) }
            #expect(
                try Self.rows(peer.db, "SELECT listID, userID FROM listMembers")
                    == allMembers.filter { listIDs.contains($0[0]) },
                "\(backend) seed \(seed): \(user)'s memberships")
            func kept(_ rows: [[String]]) -> [[String]] {
                rows.filter { !refused.contains("\(WireValue.text($0[0]))") }
            }
            #expect(
                kept(try Self.rows(peer.db, "SELECT id, name FROM remindersLists")) == kept(ownLists),
                "\(backend) seed \(seed): \(user)'s lists")
            let held = kept(try Self.rows(peer.db, "SELECT id, listID, title FROM reminders"))
            let heldLists = try Self.rows(peer.db, "SELECT id, name FROM remindersLists")
            #expect(
                held == kept(ownReminders),
                "\(backend) seed \(seed): \(user) holds \(held.filter { !kept(ownReminders).contains($0) }) and misses \(kept(ownReminders).filter { !held.contains($0) }); refused \(refused), lists \(heldLists) of \(allLists)"
            )
            #expect(try peer.log.pendingCount(peer.db) == 0)
        }
        withExtendedLifetime(server) {}
    }

    /// The rows of `sql`, each as its columns' text, in order.
    static func rows(_ db: Database, _ sql: String) throws -> [[String]] {
        try db.fetchAll(SQL(sql: sql + " ORDER BY 1", arguments: [])).map { row in
            try (0..<row.count).map { try row.decode(String.self, at: $0) }
        }
    }
}
