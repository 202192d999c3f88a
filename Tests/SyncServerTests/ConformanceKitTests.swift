import Foundation
import Testing

/// The protocol's conformance kit (`Protocol/conformance/run.py`) against the reference server, on
/// each backend: the server started with the test clock, and a second one over the same datasets'
/// kind of storage with the limits some vectors name.
@Suite("Conformance kit against ostore-server")
struct ConformanceKitTests {
    @Test(arguments: StorageBackend.allCases)
    func theKitPassesAgainstALiveServer(backend: StorageBackend) throws {
        let directory = try TemporaryDirectory()
        let server = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("data")), backend: backend,
            arguments: ["--allow-test-clock"])
        // On PostgreSQL both servers share one database, so one admin command serves both.
        let limited = try LiveServer(
            dataDirectory: URL(fileURLWithPath: directory.path("limited")), backend: backend,
            postgresURL: server.postgresURL, arguments: ["--allow-test-clock", "--max-changes-per-push", "2"])
        let tool = try builtProduct("ostore-server").path
        func admin(_ server: LiveServer) -> String {
            let storage =
                server.postgresURL.map { "OSTORE_POSTGRES_URL='\($0)'" }
                ?? "OSTORE_SERVER_DATA='\(server.dataDirectory.path)'"
            return "\(storage) '\(tool)'"
        }
        let kit = DocumentedCode.packageRoot.appendingPathComponent("Protocol/conformance/run.py").path
        let result = try run(
            "/usr/bin/env",
            [
                "python3", kit, "--server", server.baseURL.absoluteString, "--admin", admin(server),
                "--limited-server", limited.baseURL.absoluteString, "--limited-admin", admin(limited),
            ], timeout: .seconds(900))
        let output = String(decoding: result.output, as: UTF8.self)
        let errors = String(decoding: result.error, as: UTF8.self)
        let summary = output.split(separator: "\n").last.map(String.init) ?? ""
        print("conformance kit on \(backend): \(summary)")
        #expect(result.status == 0, "the kit reported failures:\n\(output)\(errors)")
        #expect(summary.contains(" passed, 0 failed"), "\(summary)")
        // Every vector is replayed: only the codes no request can provoke are not run, and
        // out_of_scope, which needs scope rules the kit's admin interface does not set.
        let notRun = output.split(separator: "\n").filter { $0.hasPrefix("not run ") }
        #expect(
            notRun.allSatisfy { line in
                ["rate_limited", "internal_error", "unavailable", "out_of_scope"].contains {
                    line.hasPrefix("not run errors.\($0)")
                }
            }, "\(notRun)")
    }

    /// Without `--allow-test-clock` a request that tries to fix the clock is refused, and /healthz
    /// says nothing of a test clock; with it, the clock a push is checked against is the one named.
    @Test func theTestClockIsRefusedUnlessTheServerAllowsIt() throws {
        let plain = try LiveServer(backend: .sqlite)
        let token = try makeDataset(plain, "clock")
        let site = String(repeating: "ab", count: 16)
        let body = Data(
            #"{"protocolVersion":2,"schemaVersion":"1.0.0","site":"\#(site)","changes":[]}"#.utf8)
        func push(_ server: LiveServer, _ token: String, now: String?) throws -> (Int, String) {
            let answer = try server.request(
                "POST", "/v1/datasets/clock/push", token: token, json: body,
                headers: now.map { [("OStore-Test-Now", $0)] } ?? [])
            return (answer.status, answer.text)
        }
        #expect(try push(plain, token, now: nil).0 == 200)
        let refused = try push(plain, token, now: "1764000000000")
        #expect(refused.0 == 400 && refused.1.contains("invalid_message") && refused.1.contains("--allow-test-clock"))
        #expect(try health(plain) == #"{"status":"ok"}"#)

        let testing = try LiveServer(backend: .sqlite, arguments: ["--allow-test-clock"])
        let testingToken = try makeDataset(testing, "clock")
        #expect(try health(testing) == #"{"status":"ok","testClock":true}"#)
        #expect(try push(testing, testingToken, now: "1764000000000").0 == 200)
        #expect(try push(testing, testingToken, now: "-5").1.contains("invalid_message"))
        #expect(try String(contentsOf: testing.logFile, encoding: .utf8).contains(#""event":"testClock""#))
    }

    /// The limits are options of `serve`, stated by every hello; one out of its range stops the
    /// server before it listens, naming the option.
    @Test func theLimitsAreOptionsAndOutOfRangeValuesAreRefused() throws {
        let server = try LiveServer(
            backend: .sqlite,
            arguments: [
                "--max-changes-per-push", "2", "--max-changes-per-pull", "3", "--max-identifier-length", "40",
                "--max-nesting-depth", "12", "--max-pushes-in-flight", "4", "--max-clock-drift", "7",
            ])
        let token = try makeDataset(server, "limits")
        let hello = try TestPeer(server, dataset: "limits", token: token, siteByte: 0xCD).hello()
        let limits = hello.limits
        let stated: [Int] = [
            limits.maxChangesPerPush, limits.maxChangesPerPull, limits.maxIdentifierLength, limits.maxNestingDepth,
            limits.maxPushesInFlight ?? 0,
        ]
        #expect(stated == [2, 3, 40, 12, 4])
        #expect(limits.maxClockDriftMilliseconds == 7000)

        let directory = try TemporaryDirectory()
        let refused = try run(
            try builtProduct("ostore-server").path,
            ["serve", "--data", directory.path("data"), "--port", "0", "--max-changes-per-push", "0"])
        #expect(refused.status == 2)
        #expect(
            String(decoding: refused.error, as: UTF8.self).contains(
                "--max-changes-per-push takes a whole number from 1"))
    }

    private func health(_ server: LiveServer) throws -> String {
        try server.request("GET", "/healthz").text
    }
}
