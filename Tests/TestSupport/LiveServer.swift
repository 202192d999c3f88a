import Foundation
import PostgresScratchCluster
import SyncProtocol
import SyncServer

/// The storage a test server runs on; protocol tests run once per backend (`@Test(arguments:)`).
public enum StorageBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }
}

/// An `ostore-server serve` process on 127.0.0.1 and a free port, over a data directory of the
/// test's own (SQLite) or a database of its own on the shared throwaway PostgreSQL cluster (or
/// the `postgresURL` given: servers given the same URL share their datasets); stopped (SIGTERM)
/// when the test drops it. Give `--tls-cert FILE --tls-key FILE` in `arguments` for HTTPS.
///
/// ```swift
/// let server = try LiveServer(dataDirectory: directory.url.appendingPathComponent("data"), backend: .postgres)
/// let token = try makeDataset(server, "family")
/// // talk to server.baseURL
/// ```
///
/// `@unchecked Sendable`: `process`, `port` and `scheme` change only in `killAndRestart()` and
/// `startAgainOnSamePort()` (and `ownDirectory` only in the initializer), which a test calls while
/// no other thread uses the server; everything else is immutable or a thread-safe
/// pipe.
public final class LiveServer: @unchecked Sendable {
    public let dataDirectory: URL
    public let backend: StorageBackend
    /// The database of a PostgreSQL-backed server (given to it in `OSTORE_POSTGRES_URL`).
    public let postgresURL: String?
    public let arguments: [String]
    public private(set) var process: Process
    public private(set) var port: UInt16
    /// `http` or `https`, as the server reported it.
    public private(set) var scheme: String
    /// Where the server's standard error (its request log) goes, appended across restarts.
    public let logFile: URL
    /// The temporary directory a server made by ``init(backend:arguments:)`` lives in.
    private var ownDirectory: TemporaryDirectory?

    /// A server in a temporary directory of its own, removed when the server is released.
    public convenience init(backend: StorageBackend, arguments: [String] = []) throws {
        let directory = try TemporaryDirectory()
        try self.init(
            dataDirectory: directory.url.appendingPathComponent("data"), backend: backend, arguments: arguments)
        ownDirectory = directory
    }

    public init(
        dataDirectory: URL, backend: StorageBackend = .sqlite, postgresURL: String? = nil, arguments: [String] = []
    ) throws {
        self.dataDirectory = dataDirectory
        self.backend = backend
        self.postgresURL =
            backend == .postgres ? try postgresURL ?? PostgresCluster.shared().createDatabase() : nil
        self.arguments = arguments
        try FileManager.default.createDirectory(
            at: dataDirectory.deletingLastPathComponent(), withIntermediateDirectories: true)
        logFile = dataDirectory.deletingLastPathComponent().appendingPathComponent("server-\(UUID().uuidString).log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        (process, scheme, port) = try Self.start(
            storage: Self.storageOptions(dataDirectory, self.postgresURL), port: 0, arguments: arguments, log: logFile)
    }

    /// `--data DIR` for SQLite; for PostgreSQL the URL goes in the environment, as an operator's
    /// password should.
    private static func storageOptions(_ dataDirectory: URL, _ postgresURL: String?) -> (
        arguments: [String], environment: [String: String]
    ) {
        var environment = ProcessInfo.processInfo.environment
        environment["OSTORE_POSTGRES_URL"] = postgresURL
        return (postgresURL == nil ? ["--data", dataDirectory.path] : [], environment)
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// `http://127.0.0.1:PORT` (or https).
    public var baseURL: URL { URL(string: "\(scheme)://127.0.0.1:\(port)")! }

    private static func start(
        storage: (arguments: [String], environment: [String: String]), port: UInt16, arguments: [String], log: URL
    ) throws
        -> (Process, String, UInt16)
    {
        let process = Process()
        process.executableURL = try builtProduct("ostore-server")
        process.arguments = ["serve"] + storage.arguments + ["--port", String(port)] + arguments
        process.environment = storage.environment
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
        // "listening on http://127.0.0.1:PORT" or https.
        let text = String(decoding: line, as: UTF8.self)
        guard let address = text.split(separator: " ").last?.split(separator: "\n").first,
            let schemeEnd = address.range(of: "://"),
            let portText = address.split(separator: ":").last,
            let port = UInt16(portText.trimmingCharacters(in: .whitespaces))
        else { throw ServerStartFailure(output: text) }
        return (process, String(address[..<schemeEnd.lowerBound]), port)
    }

    /// Stops with SIGTERM and returns the exit status.
    @discardableResult
    public func stop() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Kills with SIGKILL (no chance to finish anything) and starts again on the same data.
    public func killAndRestart() throws {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        (process, scheme, port) = try Self.start(
            storage: Self.storageOptions(dataDirectory, self.postgresURL), port: 0, arguments: arguments, log: logFile)
    }

    /// Starts again on the same storage and the same port after ``stop()``, as an operator
    /// restarting the service would: clients that kept the address reach it again.
    public func startAgainOnSamePort() throws {
        precondition(!process.isRunning, "stop the server first")
        (process, scheme, port) = try Self.start(
            storage: Self.storageOptions(dataDirectory, self.postgresURL), port: port, arguments: arguments,
            log: logFile)
    }

    /// The server's resident memory in kB, from /proc (`VmRSS`).
    public var residentKilobytes: Int { statusKilobytes("VmRSS:") }

    /// The server's peak resident memory in kB, from /proc (`VmHWM`).
    public var peakResidentKilobytes: Int { statusKilobytes("VmHWM:") }

    private func statusKilobytes(_ field: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field) } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Opens the same storage the server uses, for setting up datasets and tokens.
    public func storage() throws -> any SyncStorage {
        if let postgresURL { return try PostgresSyncStorage(url: postgresURL, connections: 2) }
        return try SQLiteSyncStorage(directory: dataDirectory)
    }
}

public struct ServerStartFailure: Error, CustomStringConvertible {
    public let output: String
    public var description: String { "ostore-server did not report its address; it printed: \(output)" }
}

/// Makes a dataset (unless it exists) and a token for it on `server`'s storage; returns the token.
/// With `allowingMajor`, the dataset may move up to that major, as after
/// `ostore-server dataset create NAME --allow-major N`.
public func makeDataset(_ server: LiveServer, _ name: String, readOnly: Bool = false, allowingMajor major: Int? = nil)
    throws -> String
{
    let storage = try server.storage()
    if try !storage.datasets().contains(where: { $0.name == name }) { try storage.createDataset(named: name) }
    if let major { try storage.allowMajor(major, dataset: name) }
    return try storage.createToken(dataset: name, readOnly: readOnly).secret
}

/// A self-signed certificate for 127.0.0.1 and localhost and its key, made with the `openssl`
/// command in `directory`, valid for a day.
public func makeSelfSignedCertificate(in directory: TemporaryDirectory, name: String) throws -> (
    certificate: String, key: String
) {
    let certificate = directory.path("\(name)-cert.pem")
    let key = directory.path("\(name)-key.pem")
    let result = try run(
        "/usr/bin/openssl",
        [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", key, "-out", certificate,
        ])
    guard result.status == 0 else {
        throw CommandFailure(
            command: "openssl req", status: result.status, error: String(decoding: result.error, as: UTF8.self))
    }
    return (certificate, key)
}
