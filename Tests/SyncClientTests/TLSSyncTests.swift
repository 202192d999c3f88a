import Foundation
import SyncClient
import SyncProtocol
import TestSupport
import Testing

/// A real `ostore-server` over HTTPS with a certificate made by `openssl`, synced through
/// `HTTPClient` with verification on.
@Suite struct TLSSyncTests {
    struct UnexpectedStatus: Error, CustomStringConvertible {
        let status: Int
        let body: String
        var description: String { "HTTP \(status): \(body)" }
    }

    /// One site talking to one dataset through one client.
    struct Peer {
        let client: HTTPClient
        let server: LiveServer
        let token: String
        let site: SiteID
        let schema = SchemaDescription(
            version: SchemaVersion(1, 0), fingerprint: "f1", tables: ["notes": ["id", "title", "done"]])

        func post<Answer: Decodable>(_ endpoint: String, _ message: some Encodable, as: Answer.Type) throws -> Answer {
            let response = try client.send(
                HTTPClientRequest(
                    method: .post, url: server.baseURL.appendingPathComponent("v1/datasets/family/\(endpoint)"),
                    headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                    body: try ProtocolJSON.encode(message)))
            guard response.status == 200 else {
                throw UnexpectedStatus(status: response.status, body: String(decoding: response.body, as: UTF8.self))
            }
            return try JSONDecoder().decode(Answer.self, from: response.body)
        }

        func hello() throws -> HelloResponse {
            try post("hello", HelloRequest(site: site, schema: schema), as: HelloResponse.self)
        }

        func push(_ changes: [Change]) throws -> PushResponse {
            try post(
                "push", PushRequest(protocolVersion: 1, schemaVersion: schema.version, site: site, changes: changes),
                as: PushResponse.self)
        }

        func pullAll() throws -> [Change] {
            var cursor: String?
            var changes: [Change] = []
            while true {
                let page = try post(
                    "pull",
                    PullRequest(
                        protocolVersion: 1, schemaVersion: schema.version, site: site, cursor: cursor, limit: 1),
                    as: PullResponse.self)
                changes += page.changes
                cursor = page.cursor
                if !page.hasMore { return changes }
            }
        }
    }

    @Test func syncsWithAServerWhoseCertificateTheClientTrusts() throws {
        let directory = try TemporaryDirectory()
        let (certificate, key) = try makeSelfSignedCertificate(in: directory, name: "server")
        let server = try LiveServer(
            dataDirectory: directory.url.appendingPathComponent("data"),
            arguments: ["--tls-cert", certificate, "--tls-key", key])
        #expect(server.scheme == "https")
        let token = try makeDataset(server, "family")
        let client = try HTTPClient(configuration: .init(caFile: certificate))
        let writer = Peer(
            client: client, server: server, token: token, site: SiteID(bytes: Data(repeating: 0x0a, count: 16))!)

        let hello = try writer.hello()
        #expect(hello.verdict == .compatible)
        #expect(hello.protocolVersion == ProtocolVersion.current)

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let ids = [UUID().uuidString, UUID().uuidString]
        let changes = ids.enumerated().map { index, id in
            Change(
                table: "notes", key: ["id": .text(id)], op: .insert,
                columns: ["id": .text(id), "title": .text("note \(index) ✓"), "done": .integer(Int64(index))],
                clock: ChangeClock(milliseconds: now, counter: Int64(index))!, site: writer.site, seq: Int64(index + 1))
        }
        #expect(try writer.push(changes).acknowledgedThrough == 2)

        // Another site, on its own client, gets both back.
        let reader = Peer(
            client: try HTTPClient(configuration: .init(caFile: certificate)), server: server, token: token,
            site: SiteID(bytes: Data(repeating: 0x0b, count: 16))!)
        #expect(try reader.hello().verdict == .compatible)
        let pulled = try reader.pullAll()
        // A snapshot carries the changes with seq 0: it is the pushing site's queue position only.
        func unsequenced(_ change: Change) -> Change {
            var change = change
            change.seq = 0
            return change
        }
        #expect(Set(pulled.map(unsequenced)) == Set(changes.map(unsequenced)))
        #expect(pulled.count == 2)

        // Every request after the first reused the TLS connection.
        let health = try client.send(HTTPClientRequest(url: server.baseURL.appendingPathComponent("healthz")))
        #expect(health.status == 200 && health.newConnections == 0)

        // Without the CA file the same request fails verification, and says so without the token.
        let untrusted = Peer(client: try HTTPClient(), server: server, token: token, site: writer.site)
        let error = try #require(throws: TransportError.self) { try untrusted.hello() }
        #expect(error.kind == .tlsVerificationFailed)
        #expect(!error.isRetryable)
        #expect(error.url == "https://127.0.0.1:\(server.port)/v1/datasets/family/hello")
        #expect(!String(describing: error).contains(token))

        #expect(server.stop() == 0)
        let log = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(log.contains("/v1/datasets/family/push"))
        #expect(!log.contains(token))
    }
}
