import Foundation
import OfflineStore
import SyncClient
import TestSupport
import Testing

/// Each network fault on its own, through a ``FaultProxy`` in front of a real `ostore-server`:
/// requests reset before or after the server saw them, answers stalled past the client's
/// low-speed timeout or cut short, requests delivered twice. Every sync ends converged, with no
/// change lost or stored twice.
@Suite("Network faults between the engine and the server")
struct ProxyFaultTests {
    static let faults: [ProxyFault] = [
        .resetBeforeForwarding, .resetAfterForwarding, .stall, .truncate, .truncateHead, .replay, .replayEarlier,
    ]

    @Test(arguments: faults)
    func twoDevicesConvergeThroughRepeatedFaults(_ fault: ProxyFault) throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"))
        let token = try makeDataset(server, "family")
        let proxy = try FaultProxy(upstreamPort: server.port)
        defer { proxy.stop() }
        // A stall costs the client's low-speed timeout (libcurl counts it in whole seconds), so
        // fewer of them.
        let broken: Set<Int> = fault == .stall ? [3, 8] : [2, 3, 5, 8, 9, 12, 14, 17, 20, 21]
        proxy.plan = { request in broken.contains(request.number) ? fault : .pass }
        let transport = HTTPClient.Configuration(connectTimeout: .seconds(2), lowSpeedTime: .seconds(1))
        var retry = RetryPolicy(maximumAttempts: 10)
        retry.sleep = { _ in }
        let devices = try ["alice", "bob"].map { name in
            try SyncPeer(
                name: name, path: directory.path("\(name).sqlite"), server: proxy.baseURL, dataset: "family",
                token: token, transport: transport, batchSize: 7, pageSize: 5, retry: retry)
        }
        let (alice, bob) = (devices[0], devices[1])
        try alice.db.execute("INSERT INTO remindersLists (id, name) VALUES ('L', 'Home')")
        for index in 0..<30 {
            try alice.db.execute("INSERT INTO reminders (id, title, listID) VALUES (\("A\(index)"), 'a', 'L')")
        }
        try bob.db.execute("INSERT INTO remindersLists (id, name) VALUES ('M', 'Work')")
        for index in 0..<12 {
            try bob.db.execute("INSERT INTO reminders (id, title, listID) VALUES (\("B\(index)"), 'b', 'M')")
        }
        for device in [alice, bob, alice] { try device.engine.sync() }
        // Both edit one reminder: different columns both survive.
        try alice.db.execute("UPDATE reminders SET title = 'Oat milk' WHERE id = 'B1'")
        try bob.db.execute("UPDATE reminders SET priority = 4 WHERE id = 'B1'")
        for device in [alice, bob, alice] { try device.engine.sync() }

        #expect((proxy.counts[fault] ?? 0) == broken.count)
        let stored = try server.loggedChanges(dataset: "family")
        #expect(stored.count == 31 + 13 + 2)
        #expect(try server.changesStoredTwice(dataset: "family").isEmpty)
        for device in devices {
            #expect(try device.log.pendingCount(device.db) == 0)
            #expect(try device.count("reminders") == 42)
            #expect(
                try device.db.fetchAll(String.self, "SELECT title || '/' || priority FROM reminders WHERE id = 'B1'")
                    == ["Oat milk/4"])
        }
        #expect(try alice.contents() == bob.contents())
    }
}
