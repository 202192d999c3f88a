import Foundation

// ostore-bench GROUP [--rows N] [--runs N] [--json]; ostore-bench server --backend sqlite [options];
// ostore-bench sync [options]
// Prints, per workload, the median time of ours and of what it is compared with, and their ratio.

let usage = """
    usage: ostore-bench database|migration|changelog|wire|scope [--rows N] [--runs N] [--only S] [--json]
           ostore-bench server [--backend sqlite|postgres] [--servers 1,2] [--changes N] [--clients 1,4,16] [--batch N]
                               [--pull-limit N] [--server-threads N] [--server PATH] [--json]
           ostore-bench sync [--changes N] [--runs N] [--first-sync-rows N] [--first-sync-schema todos|lists]
                             [--seed-cache DIR] [--round-trip-ms N] [--pushes-in-flight N] [--server-threads N]
                             [--server PATH] [--json]
           ostore-bench live [--devices N] [--trials N] [--polling-samples N] [--server PATH] [--json]

      database   the SQLite layer: prepared and Codable inserts, Codable and hand-written fetches, cursor scan
      migration  lightweight stages at --rows and at 10000 reminders, the 12-step table rebuild against
                 the same SQL in C, the no-op open of an up-to-date 20-table database against a bare open
      changelog  inserts, one-column updates and deletes with the change log tracking them, against the
                 same statements untracked in C; the metadatabase's size after the inserts; the time and
                 peak memory of reading 5 x --rows pending changes, in a child process
      wire       the sync protocol's JSON on one push of --rows (default 5000) todos inserts: client A writing
                 the push, the server reading it and writing each change's body and key for its log, client B
                 reading it as a pull page; ns per change against one C pass over the same bytes (a tokenizing
                 scan for reading, an escape-checking copy for writing)
      scope      scoped sync on the embedded SQLite storage, through the service's request handling in this
                 process, each against the same work without rules: a user's first download of their 1% of
                 --rows reminders (default 1000000) on lists owned by 100 users in turn, against a first
                 download of a dataset holding only those rows (target 2x); 10000 reminders pushed by the
                 user, fold included, against the same push onto the same rows without rules (1.25x); a list
                 of 10000 reminders shared with the user, from the membership's push to the end of the pull
                 bringing them, against that first download (2x); --runs at most 5 (default 5), the median
                 ratio
      server     ostore-server processes (the one built next to ostore-bench: `swift build -c release`
                 first) on fresh storage per server and client count: a data directory (--backend sqlite),
                 or a database on a throwaway PostgreSQL cluster (--backend postgres; initdb and pg_ctl of
                 the Debian postgresql package, run as the postgres user when root), shared by --servers
                 processes (default 1; clients spread over them round-robin); each client a thread with its own
                 HTTPClient and site pushes its share of --changes (default 100000) in batches of --batch
                 (default 1000), then every client pulls everything from a fresh cursor in pages of
                 --pull-limit (default 1000); reports changes/s, p50/p99 request latency, the server's CPU
                 time and peak memory (VmHWM), and whether 4 clients push 50000 changes/s or more
      sync       the sync engine against an ostore-server process (built next to ostore-bench): client A
                 commits --changes (default 100000) inserts offline and syncs (pushes them), client B syncs
                 (pulls and applies them), each sync in a child process; then a client with an empty store
                 downloads a dataset of --first-sync-rows rows (default 1000000; 0 skips it): todos, or with
                 --first-sync-schema lists todos each in one of 1000 lists (listID REFERENCES lists(id), indexed,
                 the lists first in the dataset: the apply's foreign key work at every page). Each is compared
                 with C inserting the same rows plus the same HTTP requests and body sizes over libcurl to a
                 libmicrohttpd server that only counts bytes; reports changes/s, the server's CPU time, the
                 client's CPU time and its peak memory (VmHWM); --json adds "changes", "changes_per_s",
                 "reference", "server_cpu_ms", "client_cpu_ms", "client_peak_bytes", "target", "met".
                 --seed-cache DIR keeps the first-sync dataset in DIR for later runs (storing 1000000 rows
                 through the server's storage takes minutes); delete DIR when the server's storage changes.
                 --runs N (default 1) repeats the push and pull N times, each on a fresh server and stores,
                 and reports the run with the median end-to-end time, every run's changes/s under the table
                 (in --json: "runs_changes_per_s" on the end-to-end row) and how many met the target.
                 --round-trip-ms N puts a relay between the clients and the server that hands every byte on
                 N/2 ms after it arrived each way (a network with that round trip, bandwidth unlimited);
                 the HTTP limit then adds N ms per request, as one request at a time would pay.
                 --pushes-in-flight N sets client A's SyncEngine.Configuration.pushesInFlight (default 2)
      live       live sync against an ostore-server process (built next to ostore-bench): --devices N
                 (default 1000) idle devices each hold a live pull on one connection (one thread with poll,
                 no stores), device B's SyncDaemon keeps one open too, and device A commits a row and pushes
                 it, --trials N times (default 40); reports the median and p99 time from A's commit to B's
                 applied change (targets: under 50 ms and 250 ms), the server's memory for the waiters
                 (target under 64 MB) and its CPU while they all wait (target under 2% of a core), then the
                 same with B's daemon polling at its default 30 s interval, --polling-samples N commits
                 (default 3; 0 skips them; each takes one interval)
      --rows N   rows per workload (default 200000 for database and changelog, 1000000 for migration)
      --runs N   timed runs per side; the median is reported (default 5, at least 5 recommended)
      --only S   run only the workloads whose name contains S
      --json     print a JSON array: for database {"workload", "ours_ms", "reference_ms", "ratio"}; for
                 migration {"workload", "rows", "ours_ms", "baseline", "baseline_ms", "ratio", "target",
                 "met"} with each time as {"median", "min", "max", "runs"}; for changelog the same, with
                 "ours_bytes" and "baseline_bytes" in place of the times for sizes and memory
    """

var arguments = Array(CommandLine.arguments.dropFirst())
guard let group = arguments.first, !group.hasPrefix("-") else {
    FileHandle.standardError.write(Data((usage + "\n").utf8))
    exit(2)
}
arguments.removeFirst()

// The child process the changelog group starts to read a store's pending changes; not for users.
if group == PendingReadProbe.subcommand {
    guard let path = arguments.first else {
        FileHandle.standardError.write(Data("ostore-bench: \(group) needs a store path\n".utf8))
        exit(2)
    }
    do {
        try PendingReadProbe.runInChild(path: path)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("ostore-bench: \(error)\n".utf8))
        exit(1)
    }
}

// The child process the sync group starts for each sync; not for users.
if group == SyncClientRun.subcommand {
    do {
        try SyncClientRun.runInChild(arguments)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("ostore-bench: \(error)\n".utf8))
        exit(1)
    }
}

if group == "sync" {
    var sync = SyncBenchOptions()
    while let flag = arguments.first {
        arguments.removeFirst()
        if flag == "--json" {
            sync.json = true
            continue
        }
        guard let value = arguments.first else {
            FileHandle.standardError.write(Data("ostore-bench sync: \(flag) needs a value\n\(usage)\n".utf8))
            exit(2)
        }
        arguments.removeFirst()
        let number = Int(value).flatMap { $0 >= 0 ? $0 : nil }
        switch (flag, number) {
        case ("--server", _): sync.server = value
        case ("--seed-cache", _): sync.seedCache = value
        case ("--first-sync-schema", _):
            guard let schema = FirstSyncSchema(rawValue: value) else {
                FileHandle.standardError.write(
                    Data("ostore-bench sync: --first-sync-schema is todos or lists, not \(value)\n".utf8))
                exit(2)
            }
            sync.firstSyncSchema = schema
        case ("--changes", let number?) where number > 0: sync.changes = number
        case ("--first-sync-rows", let number?): sync.firstSyncRows = number
        case ("--server-threads", let number?) where number > 0: sync.serverThreads = number
        case ("--runs", let number?) where number > 0: sync.runs = number
        case ("--pushes-in-flight", let number?) where number > 0: sync.pushesInFlight = number
        case ("--round-trip-ms", let number?) where number <= 10_000:
            sync.roundTrip = number > 0 ? .milliseconds(number) : nil
        default:
            FileHandle.standardError.write(Data("ostore-bench sync: bad option \(flag) \(value)\n\(usage)\n".utf8))
            exit(2)
        }
    }
    do {
        let results = try SyncWorkloads(options: sync).run()
        print(sync.json ? SyncResult.json(results) : SyncResult.table(results))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("ostore-bench sync: \(error)\n".utf8))
        exit(1)
    }
}

if group == "live" {
    var live = LiveBenchOptions()
    while let flag = arguments.first {
        arguments.removeFirst()
        if flag == "--json" {
            live.json = true
            continue
        }
        guard let value = arguments.first else {
            FileHandle.standardError.write(Data("ostore-bench live: \(flag) needs a value\n\(usage)\n".utf8))
            exit(2)
        }
        arguments.removeFirst()
        let number = Int(value).flatMap { $0 >= 0 ? $0 : nil }
        switch (flag, number) {
        case ("--server", _): live.server = value
        case ("--devices", let number?) where number <= 3_000: live.devices = number
        case ("--trials", let number?) where number > 0: live.trials = number
        case ("--polling-samples", let number?): live.pollingSamples = number
        default:
            FileHandle.standardError.write(Data("ostore-bench live: bad option \(flag) \(value)\n\(usage)\n".utf8))
            exit(2)
        }
    }
    do {
        let result = try LiveWorkloads(options: live).run()
        print(live.json ? result.json() : result.table())
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("ostore-bench live: \(error)\n".utf8))
        exit(1)
    }
}

if group == "server" {
    var server = ServerBenchOptions()
    while let flag = arguments.first {
        arguments.removeFirst()
        if flag == "--json" {
            server.json = true
            continue
        }
        guard let value = arguments.first else {
            FileHandle.standardError.write(Data("ostore-bench server: \(flag) needs a value\n\(usage)\n".utf8))
            exit(2)
        }
        arguments.removeFirst()
        let number = Int(value).flatMap { $0 > 0 ? $0 : nil }
        switch (flag, number) {
        case ("--backend", _): server.backend = value
        case ("--servers", _):
            let counts = value.split(separator: ",").map { Int($0) }
            guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) > 0 }) else {
                FileHandle.standardError.write(Data("ostore-bench server: --servers takes counts like 1,2\n".utf8))
                exit(2)
            }
            server.servers = counts.map { $0! }
        case ("--server", _): server.server = value
        case ("--changes", let number?): server.changes = number
        case ("--batch", let number?): server.batch = number
        case ("--pull-limit", let number?): server.pullLimit = number
        case ("--server-threads", let number?): server.serverThreads = number
        case ("--clients", _):
            let counts = value.split(separator: ",").map { Int($0).flatMap { $0 > 0 ? $0 : nil } }
            guard !counts.isEmpty, counts.allSatisfy({ $0 != nil }) else {
                FileHandle.standardError.write(Data("ostore-bench server: --clients takes counts like 1,4,16\n".utf8))
                exit(2)
            }
            server.clients = counts.map { $0! }
        default:
            FileHandle.standardError.write(Data("ostore-bench server: bad option \(flag) \(value)\n\(usage)\n".utf8))
            exit(2)
        }
    }
    do {
        let results = try ServerWorkloads(options: server).run()
        print(server.json ? ServerResult.json(results) : ServerResult.table(results))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("ostore-bench server: \(error)\n".utf8))
        exit(1)
    }
}

var options = BenchmarkOptions()
while let flag = arguments.first {
    arguments.removeFirst()
    switch flag {
    case "--json":
        options.json = true
    case "--only":
        guard let text = arguments.first else {
            FileHandle.standardError.write(Data("ostore-bench: --only needs part of a workload name\n".utf8))
            exit(2)
        }
        arguments.removeFirst()
        options.only = text
    case "--rows", "--runs":
        guard let text = arguments.first, let value = Int(text), value > 0 else {
            FileHandle.standardError.write(Data("ostore-bench: \(flag) needs a positive number\n".utf8))
            exit(2)
        }
        arguments.removeFirst()
        if flag == "--rows" { options.rows = value } else { options.runs = value }
    default:
        FileHandle.standardError.write(Data("ostore-bench: unknown option \(flag)\n\(usage)\n".utf8))
        exit(2)
    }
}

do {
    switch group {
    case "database":
        let results = try DatabaseWorkloads(options: options).run()
        print(options.json ? BenchmarkResult.json(results) : BenchmarkResult.table(results))
    case "migration":
        let results = try MigrationWorkloads(options: options).run()
        print(options.json ? MigrationResult.json(results) : MigrationResult.table(results))
    case "changelog":
        let results = try ChangeLogWorkloads(options: options).run()
        print(options.json ? ChangeLogResult.json(results) : ChangeLogResult.table(results))
    case "scope":
        let results = try ScopeWorkloads(options: options).run()
        print(options.json ? ScopeWorkloads.json(results) : ScopeWorkloads.table(results))
    case "wire":
        let wire = WireWorkloads(options: options)
        let results = try wire.run()
        print(options.json ? BenchmarkResult.json(results) : wire.table(results))
    default:
        FileHandle.standardError.write(Data("ostore-bench: unknown group \(group)\n\(usage)\n".utf8))
        exit(2)
    }
} catch {
    FileHandle.standardError.write(Data("ostore-bench: \(error)\n".utf8))
    exit(1)
}
