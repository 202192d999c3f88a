import Foundation
import SyncProtocol
import SyncServer
import Synchronization
import Testing

/// The load test of the threat model (docs/running-the-server.md): a crowd of hostile connections on
/// loopback, each group re-opening what the server closes, while `/healthz` is timed and a real
/// client syncs. It needs the machine to itself, so `make test` runs it alone after the suite
/// (`OSTORE_LOAD_TEST=1`); every loop is bounded by the test's deadline.
@Suite(
    "Reference server: under a hostile crowd",
    .enabled(if: ProcessInfo.processInfo.environment["OSTORE_LOAD_TEST"] == "1"))
struct HostileLoadTests {
    static let attack = Duration.seconds(14)

    @Test func healthAndARealClientKeepAnsweringWithinTheMemoryBound() throws {
        let server = try LiveServer(backend: .sqlite)
        let storage = try server.storage()
        try storage.createDataset(named: "family")
        let attackerTokens = try (0..<4).map { _ in try storage.createToken(dataset: "family", readOnly: false).secret }
        let realToken = try storage.createToken(dataset: "family", readOnly: false).secret
        let stop = ContinuousClock.now + Self.attack
        let counts = Counts(Tally())

        let attackers = [
            Attacker { try Self.uploadWithoutToken(server, connections: 250, from: "127.0.0.2", until: stop, counts) },
            Attacker { try Self.trickle(server, connections: 1_000, until: stop, counts) },
            Attacker { try Self.waitForever(server, tokens: attackerTokens, until: stop, counts) },
        ]
        // Let every group open its connections before measuring.
        Thread.sleep(forTimeInterval: 3)

        var latencies: [Duration] = []
        var synced = 0
        let writer = TestPeer(server, dataset: "family", token: realToken, siteByte: 0x0A)
        let reader = TestPeer(server, dataset: "family", token: realToken, siteByte: 0x0B)
        var peakKilobytes = 0
        while ContinuousClock.now < stop - .seconds(1) {
            let asked = ContinuousClock.now
            let health = try server.request("GET", "/healthz")
            latencies.append(.now - asked)
            #expect(health.status == 200)
            if latencies.count % 100 == 0 {
                // A real client pushes a batch and another pulls it, through the crowd.
                synced += 1
                let seq = Int64(synced)
                _ = try writer.push([writer.change(.insert, "r\(seq)", ["title": .text("real")], seq: seq)])
                #expect(try reader.pullAll().changes.count == synced)
            }
            peakKilobytes = max(peakKilobytes, server.residentKilobytes)
            Thread.sleep(forTimeInterval: 0.02)
        }
        for attacker in attackers { try attacker.join() }

        latencies.sort()
        let p99 = latencies[latencies.count * 99 / 100]
        let attacked = counts.value
        #expect(latencies.count >= 200)
        #expect(p99 < .milliseconds(100), "p99 of /healthz under attack: \(p99) (max \(latencies.last!))")
        #expect(synced >= 2)
        #expect(peakKilobytes < 512 * 1024, "resident memory reached \(peakKilobytes) kB")
        // The attack was real: every group kept its connections coming.
        #expect(attacked.uploadsRefused >= 250, "\(attacked)")
        #expect(attacked.slowOpened >= 1_000, "\(attacked)")
        #expect(attacked.pushesWaited >= 64, "\(attacked)")
        print(
            "hostile crowd: /healthz p50 \(latencies[latencies.count / 2]), p95 \(latencies[latencies.count * 95 / 100]), "
                + "p99 \(p99), max \(latencies.last!); "
                + "peak RSS \(peakKilobytes / 1024) MiB; \(attacked)")
    }

    /// What the attackers achieved, for the assertions and the printed line.
    struct Tally: Sendable, CustomStringConvertible {
        var uploadsRefused = 0
        var slowOpened = 0
        var slowCutOff = 0
        var pushesWaited = 0

        var description: String {
            "\(uploadsRefused) unauthenticated uploads refused, \(slowOpened) slow connections opened "
                + "(\(slowCutOff) cut off), \(pushesWaited) waiting pushes answered"
        }
    }

    typealias Counts = Locked<Tally>

    /// `connections` at a time announce 8 MiB without a token, send 64 KiB of it and read the answer;
    /// all are opened again a second after the server has refused them.
    static func uploadWithoutToken(
        _ server: LiveServer, connections: Int, from source: String, until stop: ContinuousClock.Instant,
        _ counts: Counts
    ) throws {
        let head =
            "POST /v1/datasets/family/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: 8388608\r\n\r\n"
        let start = Data(head.utf8) + Data(repeating: UInt8(ascii: "["), count: 64 * 1024)
        while ContinuousClock.now < stop {
            let open = try (0..<connections).map { _ in
                let connection = try RawHTTPConnection(port: server.port, from: source)
                try? connection.send(start)
                return connection
            }
            for connection in open {
                if let response = try? connection.readResponse(timeout: .seconds(5)), response.status == 401 {
                    counts.withLock { $0.uploadsRefused += 1 }
                }
                connection.close()
            }
            Thread.sleep(forTimeInterval: 1)
        }
    }

    /// `connections` from five addresses, each sending one header line a second and never the end
    /// of its headers; one the server cuts off is opened again.
    static func trickle(_ server: LiveServer, connections: Int, until stop: ContinuousClock.Instant, _ counts: Counts)
        throws
    {
        func open(_ index: Int) throws -> RawHTTPConnection {
            let connection = try RawHTTPConnection(port: server.port, from: "127.0.0.\(3 + index % 5)")
            try connection.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            counts.withLock { $0.slowOpened += 1 }
            return connection
        }
        var slow = try (0..<connections).map(open)
        var line = 0
        while ContinuousClock.now < stop {
            Thread.sleep(forTimeInterval: 1)
            line += 1
            for index in slow.indices {
                if (try? slow[index].send("X-Line-\(line): 1\r\n")) == nil {
                    counts.withLock { $0.slowCutOff += 1 }
                    slow[index] = try open(index)
                }
            }
        }
    }

    /// 16 pushes of each token, from sites of their own, each naming a batch that never comes, sent
    /// again as soon as they are answered.
    static func waitForever(
        _ server: LiveServer, tokens: [String], until stop: ContinuousClock.Instant, _ counts: Counts
    )
        throws
    {
        while ContinuousClock.now < stop {
            let waiting = try tokens.flatMap { token in
                try (0..<16).map { _ in
                    let connection = try RawHTTPConnection(port: server.port, from: "127.0.0.8")
                    try connection.sendRequest(
                        "POST", "/v1/datasets/family/push",
                        headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                        body: waitingPush(site: randomSite()))
                    return connection
                }
            }
            for connection in waiting {
                if let response = try? connection.readResponse(timeout: .seconds(10)), response.status == 409 {
                    counts.withLock { $0.pushesWaited += 1 }
                }
            }
        }
    }
}

/// One group of attackers, on a thread of its own from the start.
private final class Attacker: Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let failure = Locked<(any Error)?>(nil)

    init(_ work: @escaping @Sendable () throws -> Void) {
        Thread { [failure, finished] in
            do { try work() } catch { failure.value = error }
            finished.signal()
        }.start()
    }

    /// Waits for the group's loops to end (each ends at the attack's deadline) and rethrows its error.
    func join() throws {
        guard finished.wait(timeout: .now() + .seconds(60)) == .success else {
            throw RawHTTPError.timedOut("an attacker's loops to end")
        }
        if let error = failure.value { throw error }
    }
}
