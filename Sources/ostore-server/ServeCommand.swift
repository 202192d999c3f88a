import CommandLineTool
import Dispatch
import Foundation
import SyncProtocol
import SyncServer

/// `ostore-server serve --data DIR --port N`: the reference server on embedded SQLite, or with
/// `--postgres URL` on PostgreSQL, where several servers may share one database.
enum ServeCommand: Command {
    static let name = "serve"
    static let synopsis =
        "[--data DIR | --postgres URL] [--host ADDRESS] [--port N] [--tls-cert FILE --tls-key FILE] [--threads N] "
        + "[--max-body-bytes N] [--max-changes-per-push N] [--max-changes-per-pull N] [--max-clock-drift S] "
        + "[--max-identifier-length N] [--max-nesting-depth N] [--max-pushes-in-flight N] [--headers-timeout S] "
        + "[--max-pull-wait S] [--max-waiting-pulls N] [--max-waiting-pulls-per-ip N] [--max-connections-per-ip N] "
        + "[--min-body-rate N] [--body-memory-budget N] [--body-memory-per-token N] [--jwt-config FILE] "
        + "[--allow-test-clock]"
    static let summary =
        "Serve the sync protocol over HTTP (or HTTPS) from the data directory's (or the PostgreSQL database's) datasets."
    static let options =
        StorageLocation.options + [
            CommandOption(name: "--host", valueName: "ADDRESS", help: "the address to listen on (default 127.0.0.1)"),
            CommandOption(name: "--port", valueName: "N", help: "the TCP port (default 8080; 0 picks a free one)"),
            CommandOption(name: "--tls-cert", valueName: "FILE", help: "serve HTTPS with this PEM certificate (chain)"),
            CommandOption(name: "--tls-key", valueName: "FILE", help: "the certificate's unencrypted PEM private key"),
            CommandOption(name: "--threads", valueName: "N", help: "worker threads (default 4)"),
        ] + LimitOptions.commandOptions + [
            CommandOption(
                name: "--headers-timeout", valueName: "S",
                help: "seconds a connection has to send a request's headers, and a body's grace (default 10)"),
            CommandOption(
                name: "--min-body-rate", valueName: "N",
                help: "bytes a second a body must average after its grace (default 16384; 0: none)"),
            CommandOption(
                name: "--body-memory-budget", valueName: "N",
                help: "bytes all request bodies in flight may take together (default 268435456)"),
            CommandOption(
                name: "--body-memory-per-token", valueName: "N",
                help: "bytes the bodies in flight of one token may take together (default 67108864)"),
            CommandOption(
                name: "--max-waiting-pulls", valueName: "N",
                help: "live pulls waiting at once, from all clients (default \(SyncService.PullWaits.standard.total))"),
            CommandOption(
                name: "--max-waiting-pulls-per-ip", valueName: "N",
                help: "live pulls waiting at once from one client address (default "
                    + "\(SyncService.PullWaits.standard.perAddress))"),
            CommandOption(
                name: "--max-connections-per-ip", valueName: "N",
                help: "connections open at once from one client address (default \(Self.perIPConnectionLimit))"),
            CommandOption(
                name: "--jwt-config", valueName: "FILE",
                help: "accept the JSON Web Tokens this file configures, per dataset (docs/scoped-sync.md)"),
            CommandOption(
                name: "--allow-test-clock", valueName: nil,
                help: "honour the \(TestClock.header) request header (conformance runs only; never in production)"),
        ]
    static let details = """
        On start it prints one line on standard output: `listening on http://HOST:PORT` (https with
        TLS), which scripts and tests wait for. Each request is logged as one JSON line on standard
        error (method, path, status, duration, sizes; never a token). SIGTERM or SIGINT stops
        accepting connections, lets requests in flight finish (up to 10 s) and exits 0.

        With --postgres URL (or OSTORE_POSTGRES_URL) the datasets live in PostgreSQL: any number of
        servers on any machines may serve them at once. A request that loses the database is
        answered 503 with Retry-After, storing nothing; the server reconnects when it is back.

        With --data it keeps each dataset's newest serial in server.sqlite-served when it starts and
        stops; a dataset whose log is shorter at the next start (a backup copied back by hand) gets a
        new incarnation, so devices download it again (see `ostore-server restore`). A PostgreSQL
        database restored with pg_restore needs `ostore-server restore --postgres URL` instead.

        A live pull (Protocol/README.md, section 10.5) waits up to --max-pull-wait seconds for a
        change while its device is caught up, holding a connection but no thread. At most
        --max-waiting-pulls wait at once, and --max-waiting-pulls-per-ip from one address; a pull
        beyond them is answered 429 too_many_waiting_pulls and its client polls meanwhile. On
        SIGTERM every waiting pull is answered at once.

        The --max-* options set the limits every hello states (Protocol/README.md, section 12); a
        conformance run (Protocol/conformance/run.py) starts a second server with
        --max-changes-per-push 2 for the vectors that name it.

        With --jwt-config FILE the datasets the file names also accept JSON Web Tokens of their
        identity provider (HS256, RS256, ES256), besides the tokens of `ostore-server token create`:
        the token's subject (sub) is the user it syncs as. Key files are read again when they change
        (the request log says so, or why a changed file was not taken); a file that does not read at
        start stops the server with the file and the field.

        With --allow-test-clock a request may carry `\(TestClock.header): <milliseconds>` to fix the
        server's clock for that request (the drift checks of a push, a hello's serverTime). It is for
        conformance runs: the startup log says so, /healthz answers {"status":"ok","testClock":true},
        and without the flag a request carrying the header is refused with 400 invalid_message.

        exit status: 0 stopped by a signal, 2 usage error or the server could not start
        """

    /// Connections open at once: as many as the slow and idle clients a hostile crowd holds open,
    /// with room for the real ones beside them (their requests' deadlines close the slow ones).
    static let connectionLimit = 4096
    /// Connections from one address at once, by default: a crowd behind one NAT gets a share, one
    /// client cannot take them all.
    static let perIPConnectionLimit = 256

    static func run(_ arguments: ParsedArguments) -> ExitStatus {
        // Before any thread starts, so a signal sent right after the "listening" line is never lost.
        let stopSignals = StopSignals()
        guard arguments.positionals.isEmpty else {
            Console.error("ostore-server serve: unexpected \(arguments.positionals[0])")
            return .failure
        }
        guard let limits = LimitOptions.limits(from: arguments) else { return .failure }
        guard let port = UInt16(arguments.values["--port"] ?? "8080"),
            let threads = Int(arguments.values["--threads"] ?? "4"), (1...64).contains(threads),
            let headersTimeout = Int(arguments.values["--headers-timeout"] ?? "10"),
            (1...3600).contains(headersTimeout),
            let minimumBodyRate = Int(arguments.values["--min-body-rate"] ?? "16384"), minimumBodyRate >= 0,
            let bodyBudget = Int(
                arguments.values["--body-memory-budget"] ?? "\(max(268_435_456, limits.maxBodyBytes))"),
            bodyBudget >= limits.maxBodyBytes,
            let perToken = Int(
                arguments.values["--body-memory-per-token"]
                    ?? "\(max(limits.maxBodyBytes, min(67_108_864, bodyBudget)))"),
            (limits.maxBodyBytes...bodyBudget).contains(perToken),
            let perIPConnections = Int(arguments.values["--max-connections-per-ip"] ?? "\(Self.perIPConnectionLimit)"),
            (1...Self.connectionLimit).contains(perIPConnections),
            let waitingPulls = Int(
                arguments.values["--max-waiting-pulls"] ?? "\(SyncService.PullWaits.standard.total)"),
            (0...Self.connectionLimit).contains(waitingPulls),
            let waitingPullsPerIP = Int(
                arguments.values["--max-waiting-pulls-per-ip"]
                    ?? "\(min(SyncService.PullWaits.standard.perAddress, perIPConnections / 2))"),
            (0...perIPConnections).contains(waitingPullsPerIP)
        else {
            Console.error(
                "ostore-server serve: --port, --threads (1-64), --headers-timeout (1-3600 seconds), "
                    + "--min-body-rate (≥ 0) and "
                    + "--body-memory-budget (≥ --max-body-bytes) and --body-memory-per-token (between the two), "
                    + "--max-connections-per-ip (1-\(Self.connectionLimit)), --max-waiting-pulls "
                    + "(0-\(Self.connectionLimit)) and --max-waiting-pulls-per-ip (0 to --max-connections-per-ip) "
                    + "take numbers")
            return .failure
        }
        let maxBody = limits.maxBodyBytes
        let certificate = arguments.values["--tls-cert"]
        let key = arguments.values["--tls-key"]
        guard (certificate == nil) == (key == nil) else {
            Console.error("ostore-server serve: give both --tls-cert and --tls-key, or neither")
            return .failure
        }
        // A connection per thread that may answer a request: the polling threads, and as many
        // handler threads for pushes that wait for the batch they follow (HandlerThreads). A request
        // seldom waits for one: on PostgreSQL those waiting pushes borrow one only to ask again
        // whether their batch is stored.
        guard let storage = StorageLocation.open(arguments, command: name, connections: 2 * threads, folds: true)
        else {
            return .failure
        }
        // Only a data directory can be put back behind the server's back with its record of served
        // serials left in place beside it; a PostgreSQL restore brings back whatever the database
        // held, so its operator renews the incarnations (`ostore-server restore --postgres`).
        let dataDirectory = storage as? SQLiteSyncStorage
        dataDirectory?.reportFoldProblems { problem in
            if let problem {
                RequestLog.write([
                    "event": "foldFailed", "message": problem,
                    "consequence": "pushes are stored and acknowledged; first downloads trail the log until a fold "
                        + "succeeds (retried every half second)",
                ])
            } else {
                RequestLog.write(["event": "foldRecovered"])
            }
        }
        do {
            for dataset in try dataDirectory?.renewIncarnationsOfDatasetsThatWentBack() ?? [] {
                RequestLog.write([
                    "event": "datasetWentBack", "dataset": dataset.name, "servedSerial": "\(dataset.servedSerial)",
                    "lastSerial": "\(dataset.lastSerial)",
                    "message": "the log is shorter than when the server last ran (restored by hand?); new incarnation: "
                        + "devices download it again",
                ])
            }
        } catch {
            Console.error("ostore-server serve: \(error)")
            return .failure
        }
        let allowsTestClock = arguments.flags.contains("--allow-test-clock")
        if allowsTestClock {
            RequestLog.write([
                "event": "testClock",
                "message": "--allow-test-clock: requests may fix the server's clock with \(TestClock.header); "
                    + "for conformance runs only",
            ])
        }
        var jsonWebTokens: JWTVerifier?
        if let path = arguments.values["--jwt-config"] {
            do {
                jsonWebTokens = try JWTVerifier(
                    configuration: try JWTConfiguration.load(from: URL(fileURLWithPath: path))
                ) {
                    message in RequestLog.write(["event": "jwtKeys", "message": message])
                }
            } catch {
                Console.error("ostore-server serve: --jwt-config: \(error)")
                return .failure
            }
        }
        let service = SyncService(
            storage: storage, limits: limits, allowsTestClock: allowsTestClock,
            pullWaits: .init(total: waitingPulls, perAddress: waitingPullsPerIP), jsonWebTokens: jsonWebTokens)
        service.reportScopeRules { dataset, version in
            RequestLog.write([
                "event": "scopeRules",
                "message": "dataset \(dataset) is served under version \(version) of its scope rules",
            ])
        }
        var configuration = HTTPServer.Configuration(
            address: arguments.values["--host"] ?? "127.0.0.1", port: port, threads: threads,
            connectionLimit: Self.connectionLimit, perIPConnectionLimit: perIPConnections, maxBodyBytes: maxBody,
            tls: certificate.map { HTTPServer.Configuration.TLS(certificatePath: $0, privateKeyPath: key!) })
        configuration.headersTimeout = .seconds(headersTimeout)
        configuration.minimumBodyRate = minimumBodyRate
        configuration.bodyMemoryBudget = bodyBudget
        configuration.bodyMemoryPerShare = perToken
        configuration.log = { message in RequestLog.write(["event": "http", "message": message]) }
        // Every request is answered on the polling thread that read it: a push that must wait for the
        // batch it follows is deferred without a thread, and stored on a handler thread once it may be.
        configuration.runsOffPollingThread = { _ in false }
        configuration.requiresContentLength = true
        configuration.admit = { service.admit($0) }
        // Waiting live pulls are answered at once (caught up), so stopping does not wait for them.
        configuration.stopping = { service.answerWaitingPulls() }
        configuration.requestRefused = { head, response, nanoseconds in
            RequestLog.refused(head, response, nanoseconds: nanoseconds)
        }
        service.reportAnswers { request, response, nanoseconds in
            RequestLog.request(request, response, nanoseconds: nanoseconds)
        }
        guard FileDescriptorLimit.raise(toAtLeast: Self.connectionLimit + 64) else {
            Console.error(
                "ostore-server serve: the process may open fewer than \(Self.connectionLimit + 64) files "
                    + "(RLIMIT_NOFILE); raise its hard limit (systemd: LimitNOFILE=)")
            return .failure
        }
        let server: HTTPServer
        do {
            server = try HTTPServer(configuration: configuration, replying: { service.reply(to: $0) })
        } catch {
            Console.error("ostore-server serve: \(error)")
            return .failure
        }
        service.reportOpenConnections { [weak server] in server?.openConnections ?? 0 }
        let scheme = certificate == nil ? "http" : "https"
        Console.output("listening on \(scheme)://\(configuration.address):\(server.port)")
        stopSignals.wait()
        let drained = server.stop(gracePeriod: .seconds(10))
        do {
            try dataDirectory?.recordServedSerials()
        } catch {
            RequestLog.write(["event": "error", "message": error.description])
        }
        RequestLog.write(["event": "stopped", "drained": drained ? "true" : "false"])
        return .success
    }
}
