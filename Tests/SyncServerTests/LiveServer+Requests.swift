import Foundation
import SyncProtocol
import SyncServer
import Testing

/// Requests to a live server through `RawHTTPConnection`, one connection each.
extension LiveServer {
    /// One request on a new connection.
    func request(
        _ method: String, _ path: String, token: String? = nil, json: Data? = nil, headers: [(String, String)] = []
    ) throws -> RawHTTPResponse {
        let connection = try RawHTTPConnection(port: port)
        var all = headers
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        if json != nil { all.append(("Content-Type", "application/json")) }
        try connection.sendRequest(method, path, headers: all, body: json ?? Data())
        return try connection.readResponse(timeout: .seconds(30))
    }

    /// Posts a protocol message and decodes the answer (or fails with the error body).
    func post<Answer: Decodable>(
        _ endpoint: String, dataset: String, token: String, _ message: some Encodable, as: Answer.Type
    ) throws -> Answer {
        let response = try request(
            "POST", "/v1/datasets/\(dataset)/\(endpoint)", token: token, json: try ProtocolJSON.encode(message))
        guard response.status == 200 else { throw UnexpectedAnswer(status: response.status, body: response.text) }
        return try JSONDecoder().decode(Answer.self, from: response.body)
    }
}

struct UnexpectedAnswer: Error, CustomStringConvertible {
    let status: Int
    let body: String
    var description: String { "HTTP \(status): \(body)" }
}

/// A test's view of one dataset on a live server: a token and a site that pushes and pulls.
struct TestPeer: Sendable {
    let server: LiveServer
    let dataset: String
    let token: String
    let site: SiteID
    var schema = SchemaDescription(
        version: SchemaVersion(1, 0), fingerprint: "f1", tables: ["notes": ["id", "title", "body"]])

    init(_ server: LiveServer, dataset: String, token: String, siteByte: UInt8) {
        self.server = server
        self.dataset = dataset
        self.token = token
        site = SiteID(bytes: Data(repeating: siteByte, count: 16))!
    }

    func hello() throws -> HelloResponse {
        try server.post(
            "hello", dataset: dataset, token: token, HelloRequest(site: site, schema: schema), as: HelloResponse.self)
    }

    func push(_ changes: [Change]) throws -> PushResponse {
        try server.post(
            "push", dataset: dataset, token: token,
            PushRequest(protocolVersion: 1, schemaVersion: schema.version, site: site, changes: changes),
            as: PushResponse.self)
    }

    func pull(cursor: String?, limit: Int? = nil) throws -> PullResponse {
        try server.post(
            "pull", dataset: dataset, token: token,
            PullRequest(protocolVersion: 1, schemaVersion: schema.version, site: site, cursor: cursor, limit: limit),
            as: PullResponse.self)
    }

    /// Pulls from `cursor` until the server has nothing more; returns every change and the last cursor.
    func pullAll(from cursor: String? = nil, limit: Int? = nil) throws -> (changes: [Change], cursor: String?) {
        var cursor = cursor
        var changes: [Change] = []
        while true {
            let page = try pull(cursor: cursor, limit: limit)
            changes += page.changes
            cursor = page.cursor
            if !page.hasMore { return (changes, cursor) }
        }
    }

    /// A change of this peer's site.
    func change(
        _ op: Change.Operation, _ id: String, _ columns: [String: WireValue] = [:], seq: Int64, clock: Int64? = nil
    ) -> Change {
        let milliseconds = clock ?? (1_764_000_000_000 + seq)
        return Change(
            table: "notes", key: ["id": .text(id)], op: op, columns: columns,
            clock: ChangeClock(milliseconds: milliseconds, counter: 0)!, site: site, seq: seq)
    }
}
