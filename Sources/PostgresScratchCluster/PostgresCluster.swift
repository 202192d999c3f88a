import Foundation

/// A throwaway PostgreSQL cluster on 127.0.0.1 and a free port: `initdb` in a new temporary
/// directory, started with `pg_ctl`, removed when the object is released, and in any case by a
/// watchdog shortly after the process that made it exits (even if it crashed). `initdb` refuses
/// to run as root, so as root the cluster runs as the `postgres` user the Debian package creates.
/// Trust authentication on loopback; never for real data.
///
/// Tests share one cluster (``shared()``), each with databases of its own (``createDatabase()``);
/// a test that stops the database makes a cluster of its own.
///
/// ```swift
/// let url = try PostgresCluster.shared().createDatabase()   // postgresql://postgres@127.0.0.1:PORT/t_…
/// ```
///
/// See <https://www.postgresql.org/docs/15/app-initdb.html> and
/// <https://www.postgresql.org/docs/15/app-pg-ctl.html>.
///
/// `@unchecked Sendable`: every stored property is immutable; `start()`, `stop()` and
/// `createDatabase()` only run commands.
public final class PostgresCluster: @unchecked Sendable {
    public let port: UInt16
    public let binaries: URL
    /// The temporary directory: the cluster's files in `data`, its log in `log`, its socket.
    public let directory: URL
    private var data: String { directory.appendingPathComponent("data").path }

    private static let sharedCluster = Result<PostgresCluster, any Error> { try PostgresCluster() }

    /// The cluster this test process shares, started on first use.
    public static func shared() throws -> PostgresCluster { try sharedCluster.get() }

    /// Settings for a disposable cluster: no fsync (its data never needs to survive a crash of
    /// the machine), room for many test servers' connections.
    public static let testSettings = [
        "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "300",
        "shared_buffers": "64MB",
    ]

    public init(settings: [String: String] = PostgresCluster.testSettings) throws {
        binaries = try Self.findBinaries()
        directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("ostore-postgres-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory.path)
        if getuid() == 0 {
            try FileManager.default.setAttributes([.ownerAccountName: "postgres"], ofItemAtPath: directory.path)
        }
        port = try Self.freePort()
        try Self.watch(directory: directory, binaries: binaries)
        try asPostgres(
            "initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"])
        var configuration = [
            "port": String(port), "listen_addresses": "'127.0.0.1'", "unix_socket_directories": "'\(directory.path)'",
        ]
        configuration.merge(settings) { _, new in new }
        let lines = configuration.sorted { $0.key < $1.key }.map { "\($0.key) = \($0.value)" }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/postgresql.conf"))
        file.seekToEndOfFile()
        file.write(Data(("\n" + lines.joined(separator: "\n") + "\n").utf8))
        try file.close()
        try start()
    }

    deinit {
        _ = try? asPostgres("pg_ctl", ["-D", data, "stop", "-m", "immediate"])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts the cluster and waits until it accepts connections.
    public func start() throws {
        try asPostgres("pg_ctl", ["-D", data, "-l", directory.appendingPathComponent("log").path, "-w", "start"])
    }

    /// Stops the cluster (`fast`: open connections are cut, as when a database server goes away).
    public func stop() throws {
        try asPostgres("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"])
    }

    /// A new, empty database; its URL.
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try SpawnedCommand.runToEnd([
            binaries.appendingPathComponent("createdb").path, "-h", "127.0.0.1", "-p", String(port), "-U", "postgres",
            name,
        ])
        return url(database: name)
    }

    public func url(database: String) -> String { "postgresql://postgres@127.0.0.1:\(port)/\(database)" }

    /// A backup of the database at `url` in `file`, as an operator makes one while servers run:
    /// `pg_dump --format=custom` (one consistent snapshot).
    /// See <https://www.postgresql.org/docs/15/app-pgdump.html>.
    public func dump(_ url: String, to file: String) throws {
        try SpawnedCommand.runToEnd([
            binaries.appendingPathComponent("pg_dump").path, "--format=custom", "--file", file, url,
        ])
    }

    /// Puts the backup in `file` back into the database at `url` as docs/POSTGRES.md tells an
    /// operator to, with no server on it: `pg_restore --clean --if-exists --single-transaction`,
    /// which drops what the database holds now and recreates it from the dump.
    /// See <https://www.postgresql.org/docs/15/app-pgrestore.html>.
    public func restore(_ file: String, into url: String) throws {
        try SpawnedCommand.runToEnd([
            binaries.appendingPathComponent("pg_restore").path, "--clean", "--if-exists", "--single-transaction",
            "--dbname", url, file,
        ])
    }

    /// Runs `sql` on the database at `url` with `psql`, stopping at the first error.
    public func execute(_ sql: String, in url: String) throws {
        try SpawnedCommand.runToEnd([
            binaries.appendingPathComponent("psql").path, "--no-psqlrc", "--quiet", "--set", "ON_ERROR_STOP=1",
            "--dbname", url, "--command", sql,
        ])
    }

    private func asPostgres(_ tool: String, _ arguments: [String]) throws {
        let path = binaries.appendingPathComponent(tool).path
        try SpawnedCommand.runToEnd(
            getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments : [path] + arguments)
    }

    /// The newest `/usr/lib/postgresql/N/bin` with `initdb` (Debian's layout; `postgresql` package).
    private static func findBinaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
            .compactMap { Int($0) }.sorted(by: >)
        for version in versions {
            let bin = root.appendingPathComponent("\(version)/bin")
            if FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("initdb").path) { return bin }
        }
        throw CommandFailure(
            command: "initdb", status: -1,
            error: "no PostgreSQL server in /usr/lib/postgresql/*/bin; install the Debian package `postgresql` "
                + "(`make test` does)")
    }

    /// A TCP port nothing listens on now (the kernel's pick for port 0).
    private static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else { throw CommandFailure(command: "bind", status: errno, error: "no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// A detached shell that waits for this process to end, then stops the cluster and removes
    /// its directory: nothing is left running after a test process that crashed.
    private static func watch(directory: URL, binaries: URL) throws {
        let stop =
            (getuid() == 0 ? "/usr/sbin/runuser -u postgres -- " : "")
            + "'\(binaries.path)/pg_ctl' -D '\(directory.path)/data' stop -m immediate"
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop); rm -rf '\(directory.path)'"
        // `setsid -f` forks the watchdog off in a session of its own and returns at once.
        try SpawnedCommand.runToEnd(["/usr/bin/setsid", "-f", "/bin/sh", "-c", script])
    }
}
