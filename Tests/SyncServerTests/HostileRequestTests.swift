import Foundation
import SyncProtocol
import Testing

@testable import SyncServer

/// A request an attacker or a broken client might send, and the documented answer.
private struct HostileCase: CustomStringConvertible {
    enum Credential {
        case none, valid, readOnly, otherDataset, revoked, unknown
        case raw(String)
    }

    var name: String
    var method = "POST"
    var path = "/v1/datasets/family/push"
    var credential = Credential.valid
    var contentType: String? = "application/json"
    var body = Data()
    /// For a pull: the cursor sent, made from one the server issued for the dataset (the body is
    /// then that pull's).
    var cursor: (@Sendable (_ issued: String) -> String)?
    var status: Int
    var code: String?

    var description: String { name }
}

private let site = String(repeating: "a1", count: 16)
private let otherSite = String(repeating: "b2", count: 16)

/// A push body around one change, written as text so every byte is under the test's control.
private func push(_ change: String, protocolVersion: String = "1", site: String = site) -> Data {
    Data(
        #"{"protocolVersion":\#(protocolVersion),"schemaVersion":"1.0.0","site":"\#(site)","changes":[\#(change)]}"#
            .utf8)
}

private func change(
    table: String = #""notes""#, key: String = #"{"id":{"text":"n1"}}"#, op: String = #""update""#,
    columns: String = #"{"title":{"text":"x"}}"#, clock: String = #""1764000000000-0""#, site changeSite: String = site,
    seq: String = "1"
) -> String {
    #"{"table":\#(table),"key":\#(key),"op":\#(op),"columns":\#(columns),"clock":\#(clock),"site":"\#(changeSite)","seq":\#(seq)}"#
}

private func value(_ json: String) -> Data { push(change(columns: #"{"title":\#(json)}"#)) }

/// A pull body around `cursor`.
private func pull(cursor: String) -> Data {
    Data(#"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"\#(site)","cursor":"\#(cursor)"}"#.utf8)
}

/// An issued cursor (`ID.PAYLOAD.MAC`) with `change` made to its JSON, its key id and MAC kept.
private func tampered(_ change: @escaping @Sendable (String) -> String) -> @Sendable (String) -> String {
    { issued in
        var parts = issued.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        // An unsigned cursor, as earlier releases issued them, is the JSON alone.
        let payload = parts.count == 3 ? 1 : 0
        let json = String(decoding: Data(base64URLEncoded: parts[payload]) ?? Data(), as: UTF8.self)
        parts[payload] = Data(change(json).utf8).base64URLEncoded
        return parts.joined(separator: ".")
    }
}

/// A cursor's parts (`ID.PAYLOAD.MAC`) put together again by `build`.
private func rebuilt(_ build: @escaping @Sendable (_ id: String, _ payload: String, _ mac: String) -> String)
    -> @Sendable (String) -> String
{
    { issued in
        let parts = issued.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return parts.count == 3 ? build(parts[0], parts[1], parts[2]) : build("1", issued, "")
    }
}

/// A cursor's JSON with one character of its incarnation changed.
private func changingIncarnation(_ json: String) -> String {
    guard let start = json.range(of: #""incarnation":""#)?.upperBound else { return json }
    return json.replacingCharacters(in: start...start, with: json[start] == "0" ? "1" : "0")
}

private let macOfZeros = Data(count: 32).base64URLEncoded

/// A pull of dataset `family` whose cursor `cursor` makes from an issued one, answered `invalid_cursor`.
private func refusedCursor(_ name: String, _ cursor: @escaping @Sendable (String) -> String) -> HostileCase {
    HostileCase(name: name, path: "/v1/datasets/family/pull", cursor: cursor, status: 400, code: "invalid_cursor")
}

private let farFuture = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000

private let hostileCases: [HostileCase] = [
    // Credentials
    HostileCase(name: "no token", credential: .none, body: push(change()), status: 401, code: "unauthorized"),
    HostileCase(name: "unknown token", credential: .unknown, body: push(change()), status: 401, code: "unauthorized"),
    HostileCase(
        name: "basic auth", credential: .raw("Basic YWxpY2U6c2VjcmV0"), body: push(change()), status: 401,
        code: "unauthorized"),
    HostileCase(
        name: "bearer without token", credential: .raw("Bearer"), body: push(change()), status: 401,
        code: "unauthorized"),
    HostileCase(
        name: "token with SQL", credential: .raw("Bearer ost_' OR 1=1 --"), body: push(change()), status: 401,
        code: "unauthorized"),
    HostileCase(name: "revoked token", credential: .revoked, body: push(change()), status: 401, code: "unauthorized"),
    HostileCase(
        name: "another dataset's token", credential: .otherDataset, body: push(change()), status: 403, code: "forbidden"
    ),
    HostileCase(
        name: "a token for a dataset that does not exist", path: "/v1/datasets/nosuch/push", body: push(change()),
        status: 403, code: "forbidden"),
    HostileCase(
        name: "read-only token pushing", credential: .readOnly, body: push(change()), status: 403,
        code: "read_only_token"),
    // Routes and methods
    HostileCase(name: "unknown route", path: "/v2/anything", body: push(change()), status: 404, code: "not_found"),
    HostileCase(
        name: "unknown endpoint", path: "/v1/datasets/family/delete", body: push(change()), status: 404,
        code: "not_found"),
    HostileCase(name: "root", method: "GET", path: "/", status: 404, code: "not_found"),
    HostileCase(name: "GET on push", method: "GET", status: 405, code: "method_not_allowed"),
    HostileCase(
        name: "PUT on pull", method: "PUT", path: "/v1/datasets/family/pull", status: 405, code: "method_not_allowed"),
    HostileCase(name: "DELETE on healthz", method: "DELETE", path: "/healthz", status: 405, code: "method_not_allowed"),
    HostileCase(name: "POST on metrics", path: "/metrics", status: 405, code: "method_not_allowed"),
    HostileCase(
        name: "dot-dot dataset", path: "/v1/datasets/../push", body: push(change()), status: 404, code: "not_found"),
    HostileCase(
        name: "encoded dot-dot", path: "/v1/datasets/%2e%2e/push", body: push(change()), status: 404, code: "not_found"),
    HostileCase(
        name: "encoded slashes", path: "/v1/datasets/..%2f..%2fetc%2fpasswd/push", body: push(change()), status: 404,
        code: "not_found"),
    HostileCase(
        name: "extra path segment", path: "/v1/datasets/family/push/x", body: push(change()), status: 404,
        code: "not_found"),
    HostileCase(
        name: "empty dataset", path: "/v1/datasets//push", body: push(change()), status: 404, code: "not_found"),
    HostileCase(
        name: "upper-case dataset", path: "/v1/datasets/Family/push", body: push(change()), status: 404,
        code: "not_found"),
    HostileCase(
        name: "quote in dataset", path: "/v1/datasets/fam%27ily/push", body: push(change()), status: 404,
        code: "not_found"),
    HostileCase(
        name: "SQL in dataset", path: "/v1/datasets/family%3BDROP%20TABLE%20server_log/push", body: push(change()),
        status: 404, code: "not_found"),
    HostileCase(
        name: "64-character dataset", path: "/v1/datasets/\(String(repeating: "a", count: 64))/push",
        body: push(change()),
        status: 404, code: "not_found"),
    // Media type
    HostileCase(
        name: "no content type", contentType: nil, body: push(change()), status: 415, code: "unsupported_media_type"),
    HostileCase(
        name: "text/plain", contentType: "text/plain", body: push(change()), status: 415, code: "unsupported_media_type"
    ),
    // JSON syntax
    HostileCase(name: "empty body", status: 400, code: "malformed_json"),
    HostileCase(name: "truncated", body: push(change()).dropLast(7), status: 400, code: "malformed_json"),
    HostileCase(name: "not JSON", body: Data("hello".utf8), status: 400, code: "malformed_json"),
    HostileCase(name: "trailing garbage", body: push(change()) + Data(" x".utf8), status: 400, code: "malformed_json"),
    HostileCase(name: "two documents", body: push(change()) + push(change()), status: 400, code: "malformed_json"),
    HostileCase(
        name: "duplicate top-level key",
        body: Data(
            #"{"protocolVersion":1,"protocolVersion":2,"schemaVersion":"1.0.0","site":"\#(site)","changes":[]}"#.utf8),
        status: 400, code: "malformed_json"),
    HostileCase(
        name: "duplicate key in a change",
        body: push(change().replacingOccurrences(of: #""seq":1"#, with: #""seq":1,"seq":2"#)),
        status: 400, code: "malformed_json"),
    HostileCase(
        name: "duplicate key spelt with an escape", body: value(#"{"text":"a","\u0074ext":"b"}"#), status: 400,
        code: "malformed_json"),
    HostileCase(
        name: "nesting 40 deep", body: value(String(repeating: "[", count: 40) + String(repeating: "]", count: 40)),
        status: 400, code: "malformed_json"),
    HostileCase(
        name: "nesting 60000 deep", body: Data(String(repeating: "[", count: 60_000).utf8), status: 400,
        code: "malformed_json"),
    HostileCase(
        name: "invalid UTF-8", body: value(#"{"text":""#).dropLast(4) + Data([0xC3, 0x28]) + Data(#""}}}]}"#.utf8),
        status: 400, code: "malformed_json"),
    HostileCase(
        name: "raw control character", body: value("{\"text\":\"a\u{01}b\"}"), status: 400, code: "malformed_json"),
    HostileCase(name: "bad escape", body: value(#"{"text":"\q"}"#), status: 400, code: "malformed_json"),
    // Message shape and types
    HostileCase(name: "array instead of object", body: Data("[]".utf8), status: 400, code: "invalid_message"),
    HostileCase(name: "null document", body: Data("null".utf8), status: 400, code: "invalid_message"),
    HostileCase(
        name: "protocolVersion as text", body: push(change(), protocolVersion: #""1""#), status: 400,
        code: "invalid_message"),
    HostileCase(
        name: "changes not an array",
        body: Data(#"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"\#(site)","changes":{}}"#.utf8), status: 400,
        code: "invalid_message"),
    HostileCase(
        name: "site missing", body: Data(#"{"protocolVersion":1,"schemaVersion":"1.0.0","changes":[]}"#.utf8),
        status: 400,
        code: "invalid_message"),
    HostileCase(
        name: "short site", body: push(change(site: "abcd"), site: "abcd"), status: 400, code: "invalid_message"),
    HostileCase(
        name: "site not hex", body: push(change(), site: String(repeating: "zz", count: 16)), status: 400,
        code: "invalid_message"),
    HostileCase(
        name: "schema version 1.0",
        body: Data(#"{"protocolVersion":1,"schemaVersion":"1.0","site":"\#(site)","changes":[]}"#.utf8), status: 400,
        code: "invalid_message"),
    HostileCase(
        name: "clock not a clock", body: push(change(clock: #""yesterday""#)), status: 400, code: "invalid_message"),
    HostileCase(name: "negative clock", body: push(change(clock: #""-5-0""#)), status: 400, code: "invalid_message"),
    HostileCase(
        name: "clock counter overflow", body: push(change(clock: #""1764000000000-70000""#)), status: 400,
        code: "invalid_message"),
    HostileCase(
        name: "clock as number", body: push(change(clock: "1764000000000")), status: 400, code: "invalid_message"),
    HostileCase(name: "unknown operation", body: push(change(op: #""upsert""#)), status: 400, code: "invalid_message"),
    HostileCase(
        name: "value with two tags", body: value(#"{"text":"a","integer":"1"}"#), status: 400, code: "invalid_message"),
    HostileCase(name: "value without tag", body: value("{}"), status: 400, code: "invalid_message"),
    HostileCase(
        name: "value with unknown tag", body: value(#"{"date":"2026-01-01"}"#), status: 400, code: "invalid_message"),
    HostileCase(name: "integer as JSON number", body: value(#"{"integer":5}"#), status: 400, code: "invalid_message"),
    HostileCase(
        name: "integer past 64 bits", body: value(#"{"integer":"9223372036854775808"}"#), status: 400,
        code: "invalid_message"),
    HostileCase(name: "integer with plus", body: value(#"{"integer":"+1"}"#), status: 400, code: "invalid_message"),
    HostileCase(name: "blob not base64", body: value(#"{"blob":"@@@"}"#), status: 400, code: "invalid_message"),
    HostileCase(name: "real as NaN", body: value(#"{"real":"NaN"}"#), status: 400, code: "invalid_message"),
    HostileCase(name: "null false", body: value(#"{"null":false}"#), status: 400, code: "invalid_message"),
    HostileCase(name: "seq as text", body: push(change(seq: #""1""#)), status: 400, code: "invalid_message"),
    // Change rules
    HostileCase(name: "quote in table", body: push(change(table: #""no\"tes""#)), status: 400, code: "invalid_change"),
    HostileCase(
        name: "SQL in table", body: push(change(table: #""notes; DROP TABLE server_log""#)), status: 400,
        code: "invalid_change"),
    HostileCase(
        name: "space in column", body: push(change(columns: #"{"ti tle":{"text":"x"}}"#)), status: 400,
        code: "invalid_change"),
    HostileCase(
        name: "SQL in key column", body: push(change(key: #"{"id) --":{"text":"x"}}"#)), status: 400,
        code: "invalid_change"),
    HostileCase(
        name: "table starting with a digit", body: push(change(table: #""1notes""#)), status: 400,
        code: "invalid_change"),
    HostileCase(
        name: "non-ASCII column", body: push(change(columns: #"{"títle":{"text":"x"}}"#)), status: 400,
        code: "invalid_change"),
    HostileCase(
        name: "200-character table", body: push(change(table: "\"\(String(repeating: "t", count: 200))\"")),
        status: 400,
        code: "invalid_change"),
    HostileCase(name: "empty key", body: push(change(key: "{}")), status: 400, code: "invalid_change"),
    HostileCase(
        name: "null key", body: push(change(key: #"{"id":{"null":true}}"#)), status: 400, code: "invalid_change"),
    HostileCase(name: "delete with columns", body: push(change(op: #""delete""#)), status: 400, code: "invalid_change"),
    HostileCase(name: "update without columns", body: push(change(columns: "{}")), status: 400, code: "invalid_change"),
    HostileCase(
        name: "change of another site", body: push(change(site: otherSite)), status: 400, code: "invalid_change"),
    HostileCase(name: "seq zero", body: push(change(seq: "0")), status: 400, code: "invalid_change"),
    HostileCase(
        name: "seq going backwards", body: push(change(seq: "5") + "," + change(seq: "4")), status: 400,
        code: "invalid_change"),
    HostileCase(
        name: "far-future clock", body: push(change(clock: "\"\(farFuture)-0\"")), status: 400,
        code: "clock_out_of_range"),
    HostileCase(
        name: "unsupported protocol version", body: push(change(), protocolVersion: "99"), status: 400,
        code: "protocol_unsupported"),
    // Pull
    HostileCase(
        name: "garbage cursor", path: "/v1/datasets/family/pull",
        body: Data(#"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"\#(site)","cursor":"!!!"}"#.utf8),
        status: 400,
        code: "invalid_cursor"),
    HostileCase(
        name: "forged cursor of another dataset", path: "/v1/datasets/family/pull",
        body: Data(
            #"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"\#(site)","cursor":"\#(Data(#"{"dataset":"other","serial":0}"#.utf8).base64EncodedString())"}"#
                .utf8), status: 400, code: "invalid_cursor"),
    HostileCase(
        name: "forged cursor with a MAC of zeros", path: "/v1/datasets/family/pull",
        body: pull(cursor: "1.\(Data(#"{"dataset":"family","serial":0}"#.utf8).base64URLEncoded).\(macOfZeros)"),
        status: 400, code: "invalid_cursor"),
    refusedCursor(
        "issued cursor without its MAC, as earlier releases wrote cursors", rebuilt { _, payload, _ in payload }),
    refusedCursor("issued cursor with an empty MAC", rebuilt { id, payload, _ in "\(id).\(payload)." }),
    refusedCursor("issued cursor with a MAC of zeros", rebuilt { id, payload, _ in "\(id).\(payload).\(macOfZeros)" }),
    refusedCursor("issued cursor with its MAC twice", rebuilt { id, payload, mac in "\(id).\(payload).\(mac).\(mac)" }),
    refusedCursor(
        "issued cursor naming a key that does not exist", rebuilt { _, payload, mac in "999.\(payload).\(mac)" }),
    refusedCursor("issued cursor naming key 0", rebuilt { _, payload, mac in "0.\(payload).\(mac)" }),
    refusedCursor(
        "issued cursor with a 30-digit key id",
        rebuilt { _, payload, mac in "\(String(repeating: "9", count: 30)).\(payload).\(mac)" }),
    refusedCursor(
        "tampered cursor: one byte of the serial changed",
        tampered { $0.replacingOccurrences(of: #""serial":0"#, with: #""serial":1"#) }),
    refusedCursor("tampered cursor: one byte of the incarnation changed", tampered(changingIncarnation)),
    refusedCursor(
        "tampered cursor: a snapshot position with a garbage key",
        tampered { json in
            json.replacingOccurrences(
                of: #""serial":0"#,
                with: #""snapshot":{"key":"garbage","rowsDone":0,"rowsTotal":-1,"startSerial":0,"table":"notes"}"#)
        }),
    refusedCursor(
        "tampered cursor: another dataset's name",
        tampered { $0.replacingOccurrences(of: #""dataset":"family""#, with: #""dataset":"other""#) }),
]

@Suite("Reference server: hostile requests")
struct HostileRequestTests {
    @Test(arguments: StorageBackend.allCases)
    func everyHostileRequestGetsItsDocumentedAnswerAndHarmsNothing(_ backend: StorageBackend) throws {
        #expect(hostileCases.count >= 80)
        let server = try LiveServer(backend: backend, arguments: ["--max-body-bytes", "65536"])
        let storage = try server.storage()
        try storage.createDataset(named: "family")
        try storage.createDataset(named: "other")
        let valid = try storage.createToken(dataset: "family", readOnly: false).secret
        let readOnly = try storage.createToken(dataset: "family", readOnly: true).secret
        let otherToken = try storage.createToken(dataset: "other", readOnly: false)
        let revoked = try storage.createToken(dataset: "family", readOnly: false)
        try storage.revokeToken(id: revoked.id)

        // The other dataset holds a row that must come through every attack unchanged.
        let bystander = TestPeer(server, dataset: "other", token: otherToken.secret, siteByte: 0x0B)
        _ = try bystander.push([bystander.change(.insert, "safe", ["title": .text("untouched")], seq: 1)])
        let before = try ProtocolJSON.encode(try bystander.pullAll().changes)
        // The empty dataset's snapshot ends with a cursor at the log's start: the one tampered with.
        let issued = try TestPeer(server, dataset: "family", token: valid, siteByte: 0xA1).pull(cursor: nil).cursor

        for hostile in hostileCases {
            var headers: [(String, String)] = []
            if let type = hostile.contentType { headers.append(("Content-Type", type)) }
            switch hostile.credential {
            case .none: break
            case .valid: headers.append(("Authorization", "Bearer \(valid)"))
            case .readOnly: headers.append(("Authorization", "Bearer \(readOnly)"))
            case .otherDataset: headers.append(("Authorization", "Bearer \(otherToken.secret)"))
            case .revoked: headers.append(("Authorization", "Bearer \(revoked.secret)"))
            case .unknown: headers.append(("Authorization", "Bearer ost_\(String(repeating: "A", count: 43))"))
            case .raw(let value): headers.append(("Authorization", value))
            }
            let connection = try RawHTTPConnection(port: server.port)
            let body = hostile.cursor.map { pull(cursor: $0(issued)) } ?? hostile.body
            try connection.sendRequest(hostile.method, hostile.path, headers: headers, body: body)
            let response = try connection.readResponse(timeout: .seconds(10))
            #expect(response.status == hostile.status, "\(hostile.name): \(response.text.prefix(300))")
            #expect(response.errorCode == hostile.code, "\(hostile.name): \(response.text.prefix(300))")
            if hostile.status == 405 { #expect(response.headers["Allow"] != nil, "\(hostile.name)") }
        }

        // Nothing bad was stored in the attacked dataset, the bystander is untouched, the server lives.
        #expect(try storage.datasets().first { $0.name == "family" }?.changes == 0)
        #expect(try ProtocolJSON.encode(try bystander.pullAll().changes) == before)
        #expect(try server.request("GET", "/healthz").status == 200)
    }

    @Test(arguments: StorageBackend.allCases) func aBatchWithOneBadChangeStoresNone(_ backend: StorageBackend) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let good = change(seq: "1").replacingOccurrences(of: #""op":"update""#, with: #""op":"insert""#)
        let bad = change(table: #""bad table""#, seq: "2")
        let response = try server.request(
            "POST", "/v1/datasets/family/push", token: token, json: push(good + "," + bad))
        #expect(response.status == 400 && response.errorCode == "invalid_change")
        #expect(response.text.contains(#""changeIndex":1"#))
        #expect(try server.storage().datasets().first?.changes == 0)
    }

    @Test(arguments: StorageBackend.allCases) func tooManyChangesAndOversizedBodiesAreRefused(_ backend: StorageBackend)
        throws
    {
        let server = try LiveServer(backend: backend, arguments: ["--max-body-bytes", "2000000"])
        let token = try makeDataset(server, "family")
        let many = (1...5_001).map { change(seq: "\($0)") }.joined(separator: ",")
        let response = try server.request("POST", "/v1/datasets/family/push", token: token, json: push(many))
        #expect(response.status == 400 && response.errorCode == "too_many_changes")

        // One byte over the limit.
        var body = push(change())
        body += Data(repeating: UInt8(ascii: " "), count: 2_000_001 - body.count)
        // Refused on its Content-Length, before the body is read (the server may close without
        // reading it, so the body is not sent).
        let connection = try RawHTTPConnection(port: server.port)
        try connection.sendRequest(
            "POST", "/v1/datasets/family/push",
            headers: [
                ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
                ("Content-Length", "\(body.count)"),
            ])
        let over = try connection.readResponse()
        #expect(over.status == 413 && over.errorCode == "body_too_large")
        let exact = try server.request("POST", "/v1/datasets/family/push", token: token, json: body.dropLast())
        #expect(exact.status == 200, "a body of exactly the limit is read and stored: \(exact.text)")
    }

    @Test(arguments: StorageBackend.allCases) func aClaimedGigabyteIsRefusedAtOnceWithoutMemoryGrowth(
        _ backend: StorageBackend
    ) throws {
        let server = try LiveServer(backend: backend)
        let token = try makeDataset(server, "family")
        let baseline = server.residentKilobytes
        let started = ContinuousClock.now
        for _ in 0..<5 {
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest(
                "POST", "/v1/datasets/family/push",
                headers: [
                    ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"),
                    ("Content-Length", "1000000000"),
                ])
            try connection.send(Data(repeating: UInt8(ascii: "["), count: 65_536))
            let response = try connection.readResponse(timeout: .seconds(1))
            #expect(response.status == 413 && response.errorCode == "body_too_large")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(server.residentKilobytes - baseline < 16_384)
    }
}
