import Foundation
import SyncProtocol
import SyncServer
import Testing

/// An `ostore-server serve` process on 127.0.0.1 and a free port, over a data directory of the
/// test's own; stopped (SIGTERM) when the test drops it.
///
/// `@unchecked Sendable`: `process` and `port` change only in `killAndRestart()`, which a test calls
/// while no other thread uses the server; everything else is immutable or a thread-safe pipe.
final class LiveServer: @unchecked Sendable {
    let dataDirectory: URL
    let arguments: [String]
    private(set) var process: Process
    private(set) var port: UInt16
    /// Where the server's standard error (its request log) goes, appended across restarts.
    let logFile: URL

    init(dataDirectory: URL, arguments: [String] = []) throws {
        self.dataDirectory = dataDirectory
        self.arguments = arguments
        logFile = dataDirectory.deletingLastPathComponent().appendingPathComponent("server-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        (process, port) = try Self.start(dataDirectory: dataDirectory, arguments: arguments, log: logFile)
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    private static func start(dataDirectory: URL, arguments: [String], log: URL) throws -> (Process, UInt16) {
        let process = Process()
        process.executableURL = try builtProduct("ostore-server")
        process.arguments = ["serve", "--data", dataDirectory.path, "--port", "0"] + arguments
        let output = Pipe()
        process.standardOutput = output
        // A file, not a pipe: a pipe nobody reads would fill and block the server.
        let logHandle = try FileHandle(forWritingTo: log)
        logHandle.seekToEndOfFile()
        process.standardError = logHandle
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { throw ServerStartFailure(output: String(decoding: line, as: UTF8.self)) }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let portText = text.split(separator: ":").last?.split(separator: "\n").first,
            let port = UInt16(portText.trimmingCharacters(in: .whitespaces))
        else { throw ServerStartFailure(output: text) }
        return (process, port)
    }

    /// Stops with SIGTERM and returns the exit status.
    @discardableResult
    func stop() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills with SIGKILL (no chance to finish anything) and starts again on the same data.
    func killAndRestart() throws {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        (process, port) = try Self.start(dataDirectory: dataDirectory, arguments: arguments, log: logFile)
    }

    /// The server's resident memory in kB, from /proc.
    var residentKilobytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Opens the same storage the server uses, for setting up datasets and tokens.
    func storage() throws -> SQLiteSyncStorage { try SQLiteSyncStorage(directory: dataDirectory) }

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

struct ServerStartFailure: Error, CustomStringConvertible {
    let output: String
    var description: String { "ostore-server did not report its port; it printed: \(output)" }
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

/// Makes a dataset and a token for it on `server`'s storage.
func makeDataset(_ server: LiveServer, _ name: String, readOnly: Bool = false) throws -> String {
    let storage = try server.storage()
    if try !storage.datasets().contains(where: { $0.name == name }) { try storage.createDataset(named: name) }
    return try storage.createToken(dataset: name, readOnly: readOnly).secret
}
