import Foundation
import SyncServer

/// Where the benchmark's servers keep their datasets: a data directory (SQLite) or a database
/// (PostgreSQL) that several servers may share.
enum BenchStorage {
    case sqlite(URL)
    case postgres(String)

    /// Makes the benchmark's dataset and a token for it, with the same storage calls
    /// `ostore-server dataset create` and `token create` make; the token.
    func makeDataset() throws -> String {
        let storage: any SyncStorage
        switch self {
        case .sqlite(let directory): storage = try SQLiteSyncStorage(directory: directory)
        case .postgres(let url): storage = try PostgresSyncStorage(url: url, connections: 1)
        }
        try storage.createDataset(named: ServerProcess.dataset)
        return try storage.createToken(dataset: ServerProcess.dataset, readOnly: false).secret
    }
}

/// An `ostore-server serve` process the server benchmark talks to: the executable built next to
/// `ostore-bench` (or `--server PATH`), on 127.0.0.1 and a free port, over storage the benchmark
/// prepared (a dataset and a token) before starting it. Its request log goes to a file.
final class ServerProcess {
    let process: Process
    let port: UInt16
    let token: String
    static let dataset = "bench"

    /// The `ostore-server` beside this executable, unless `path` names one.
    static func executable(_ path: String?) throws -> URL {
        if let path { return URL(fileURLWithPath: path) }
        let bench = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let server = bench.deletingLastPathComponent().appendingPathComponent("ostore-server")
        guard FileManager.default.isExecutableFile(atPath: server.path) else {
            throw BenchmarkFailure(
                description:
                    "no ostore-server next to ostore-bench (\(server.path)); build both with `swift build -c release` "
                    + "or give --server PATH")
        }
        return server
    }

    /// A SQLite server over `directory/data`. `prepare` runs on the storage (dataset and token
    /// made) before the server starts: where a benchmark fills the dataset without going through
    /// HTTP. A data directory already in place (copied there by the caller) keeps its dataset; a
    /// token is added.
    convenience init(
        executable: URL, directory: URL, threads: Int, arguments: [String] = [],
        prepare: (SQLiteSyncStorage) throws -> Void = { _ in }
    ) throws {
        let data = directory.appendingPathComponent("data")
        let token: String
        // The same storage calls `ostore-server dataset create` and `token create` make; closed
        // before the server opens the directory.
        do {
            let storage = try SQLiteSyncStorage(directory: data)
            if try !storage.datasets().contains(where: { $0.name == Self.dataset }) {
                try storage.createDataset(named: Self.dataset)
            }
            token = try storage.createToken(dataset: Self.dataset, readOnly: false).secret
            try prepare(storage)
        }
        try self.init(
            executable: executable, directory: directory, storage: .sqlite(data), token: token, threads: threads,
            arguments: arguments)
    }

    /// A server on `storage`, whose dataset `token` grants, with `arguments` added to `serve`'s; its
    /// log is `directory/name.log`.
    init(
        executable: URL, directory: URL, name: String = "server", storage: BenchStorage, token: String, threads: Int,
        arguments: [String] = []
    ) throws {
        self.token = token
        let process = Process()
        process.executableURL = executable
        process.arguments = ["serve", "--port", "0", "--threads", String(threads)] + arguments
        switch storage {
        case .sqlite(let data): process.arguments! += ["--data", data.path]
        case .postgres(let url):
            // In the environment, as an operator's password should be.
            process.environment = ProcessInfo.processInfo.environment.merging(["OSTORE_POSTGRES_URL": url]) { $1 }
        }
        let output = Pipe()
        process.standardOutput = output
        let log = directory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        // A file, not a pipe: a pipe nobody reads would fill and block the server.
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                throw BenchmarkFailure(
                    description: "ostore-server did not start: \(String(decoding: line, as: UTF8.self))")
            }
            line += chunk
        }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let portText = text.split(separator: ":").last, let port = UInt16(portText) else {
            process.terminate()
            throw BenchmarkFailure(description: "ostore-server printed \(text.debugDescription), not its address")
        }
        self.process = process
        self.port = port
    }

    deinit {
        stop()
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/v1/datasets/\(Self.dataset)")! }
    /// What a `SyncEngine` is configured with (it adds `v1/datasets/…` itself).
    var rootURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// SIGTERM, then SIGKILL if the server has not exited within 30 s (a server under valgrind may
    /// never see the SIGTERM).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The server's resident memory now (`VmRSS`) in bytes.
    func residentBytes() -> Int {
        statusField("VmRSS:") * 1024
    }

    /// The server's peak resident memory (`VmHWM`) in bytes.
    func peakResidentBytes() -> Int {
        statusField("VmHWM:") * 1024
    }

    /// User plus system CPU time the server has used so far, in seconds (`/proc/PID/stat`, fields 14 and 15).
    func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name (which may hold spaces), starting with field 3 (state).
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Bytes the server has had written to the disk so far (`write_bytes` of `/proc/PID/io`): what
    /// its WAL, its checkpoints and its temporary files cost, whatever the page cache did with them.
    func diskWrittenBytes() -> Int {
        let io = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/io", encoding: .utf8)) ?? ""
        let line = io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    private func statusField(_ name: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(name) } ?? ""
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
    }
}
