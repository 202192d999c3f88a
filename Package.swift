// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "OfflineStore",
    products: [
        .library(name: "OfflineStore", targets: ["OfflineStore"]),
        .library(name: "OfflineStoreTesting", targets: ["OfflineStoreTesting"]),
        .library(name: "SyncProtocol", targets: ["SyncProtocol"]),
        .library(name: "SyncServer", targets: ["SyncServer"]),
        .library(name: "SyncClient", targets: ["SyncClient"]),
        .executable(name: "reminders", targets: ["Reminders"]),
        .executable(name: "ostore-bench", targets: ["ostore-bench"]),
        .executable(name: "ostore", targets: ["ostore"]),
        .executable(name: "ostore-server", targets: ["ostore-server"]),
    ],
    targets: [
        // SQLite from Debian's libsqlite3-dev, plus typed shims for its variadic functions and macros.
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        // libmicrohttpd (GnuTLS build) from Debian's libmicrohttpd-dev, plus typed shims for its variadic functions.
        .systemLibrary(
            name: "CMicroHTTPD",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        // zlib from Debian's zlib1g-dev, plus shims for its init macros.
        .systemLibrary(
            name: "CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // libcurl (OpenSSL build) from Debian's libcurl4-openssl-dev, plus typed shims for curl_easy_setopt
        // and curl_easy_getinfo (variadic).
        .systemLibrary(
            name: "CCurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // libpq from Debian's libpq-dev: the PostgreSQL storage backend of the reference server.
        .systemLibrary(
            name: "CLibPQ",
            providers: [.apt(["libpq-dev"])]
        ),
        // The change log's SQL functions, answered in C on every tracked row (the tracking triggers'
        // recording switch, clock, observer and watermark; the permanent triggers' tracking probe).
        .target(
            name: "CChangeTracking",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // The store's layers, each a target the compiler keeps apart (docs/ARCHITECTURE.md, "Targets
        // and layers"). The SQLite layer: connections, statements, rows, records, pools, hooks, logging.
        // The only Swift target that imports CSQLite; it wraps CChangeTracking for the change log.
        .target(
            name: "OfflineStoreSQLite",
            dependencies: ["CSQLite", "CChangeTracking"]
        ),
        // Schemas and migrations: declared schemas, snapshots and their differences, the migrator,
        // its ledger and linter; a schema's version is the protocol's `SchemaVersion`. What it needs of the change log (its bookkeeping in the user's file)
        // is the `ChangeLogBookkeeping` hook, which the change log implements and hands to migrators.
        .target(
            name: "OfflineStoreMigrations",
            dependencies: ["OfflineStoreSQLite", "SyncProtocol"]
        ),
        // The change log: the metadatabase, tracking triggers, journal, pending changes, applying
        // remote changes, coverage of writes made outside the store; declares `Migrator(plan:)`.
        .target(
            name: "OfflineStoreChangeLog",
            dependencies: ["OfflineStoreSQLite", "OfflineStoreMigrations", "SyncProtocol"]
        ),
        // What apps import: the three layers above, re-exported, with the protocol's clock and
        // schema version their API uses.
        .target(
            name: "OfflineStore",
            dependencies: ["OfflineStoreSQLite", "OfflineStoreMigrations", "OfflineStoreChangeLog", "SyncProtocol"]
        ),
        // The sync protocol's messages and rules, shared by clients and the server; Foundation only.
        .target(name: "SyncProtocol"),
        // Converting between the store's values and the wire's, for the client and the server alike:
        // `DatabaseValue` is all it needs of the store.
        .target(
            name: "SyncStoreBridge",
            dependencies: ["SyncProtocol", "OfflineStoreSQLite"]
        ),
        // libcrypto from Debian's libssl-dev: token digests, constant-time comparison, random bytes.
        .systemLibrary(
            name: "COpenSSL",
            providers: [.apt(["libssl-dev"])]
        ),
        // The reference server: HTTP, storage behind a protocol, the request handlers. It uses the
        // store's SQLite layer and its migrator (for the server's own schema) for its embedded
        // storage, and libpq for PostgreSQL; neither the change log nor the client's sync code.
        .target(
            name: "SyncServer",
            dependencies: [
                "SyncProtocol", "SyncStoreBridge", "OfflineStoreSQLite", "OfflineStoreMigrations", "COpenSSL",
                "CMicroHTTPD", "CZlib", "CLibPQ",
            ]
        ),
        // The sync client: the engine and daemon (Engine/, Daemon/) over the libcurl transport (Transport/),
        // and its own state in the metadatabase (SyncState, rejected pushes, requeued pushes).
        .target(
            name: "SyncClient",
            dependencies: ["CCurl", "CZlib", "SyncProtocol", "SyncStoreBridge", "OfflineStore"]
        ),
        // Helpers for apps' own test suites (the migration plan verifier); no test framework dependency.
        .target(
            name: "OfflineStoreTesting",
            dependencies: ["OfflineStore"]
        ),
        // The physical limit the benchmark compares against: the same workloads in plain C (SQLite,
        // and for the sync benchmark's transport libcurl and libmicrohttpd).
        .target(
            name: "CReferenceBench",
            linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("curl"), .linkedLibrary("microhttpd")]
        ),
        .executableTarget(
            name: "ostore-bench",
            dependencies: [
                "OfflineStore", "CReferenceBench", "RemindersModel", "SyncClient", "SyncServer", "SyncProtocol",
                "CommandLineTool",
                // The throwaway PostgreSQL cluster of `server --backend postgres`, shared with the tests.
                "PostgresScratchCluster",
            ]
        ),
        // A throwaway PostgreSQL cluster (initdb, pg_ctl) for the benchmark and the tests of the
        // PostgreSQL backend, and the posix_spawn command runner it starts them with; Foundation only.
        .target(name: "PostgresScratchCluster"),
        // The sample app's schema history, a library so tests and the benchmark can use it.
        .target(
            name: "RemindersModel",
            dependencies: ["OfflineStore"],
            path: "Samples/RemindersModel"
        ),
        // The command-line tool: `ostore lint`, `status`, `check`, `log`; one file per command.
        .executableTarget(
            name: "ostore",
            dependencies: ["OfflineStore", "CommandLineTool"]
        ),
        // The reference server's command: serve, dataset, token, restore, cursor-keys.
        .executableTarget(
            name: "ostore-server",
            dependencies: ["SyncServer", "SyncProtocol", "CommandLineTool"]
        ),
        // Subcommands, options and help for the package's command-line tools.
        .target(name: "CommandLineTool"),
        .executableTarget(
            name: "Reminders",
            dependencies: ["OfflineStore", "RemindersModel", "SyncClient", "CommandLineTool"],
            path: "Samples/Reminders"
        ),
        // The child process the change-log crash test kills; not a user tool.
        .executableTarget(
            name: "ostore-crash-writer",
            dependencies: ["OfflineStore", "RemindersModel"]
        ),
        // The child process whose syncs the randomised convergence test kills; not a user tool.
        .executableTarget(
            name: "ostore-crash-syncer",
            dependencies: ["OfflineStore", "RemindersModel", "SyncClient"]
        ),
        .testTarget(
            name: "SyncProtocolTests",
            dependencies: ["SyncProtocol", "TestSupport"]
        ),
        // What every test target shares: temporary directories, locks, waiting, built products, an
        // `ostore-server` process to talk to, and (re-exported) the PostgreSQL cluster.
        .target(
            name: "TestSupport",
            dependencies: ["SyncServer", "SyncProtocol", "OfflineStore", "PostgresScratchCluster"],
            path: "Tests/TestSupport"
        ),
        .testTarget(
            name: "SyncServerTests",
            dependencies: ["SyncServer", "SyncProtocol", "TestSupport"]
        ),
        .testTarget(
            name: "SyncEngineTests",
            dependencies: ["SyncClient", "SyncServer", "SyncProtocol", "OfflineStore", "RemindersModel", "TestSupport"]
        ),
        .testTarget(
            name: "SyncClientTests",
            dependencies: [
                "SyncClient", "SyncServer", "SyncProtocol", "SyncStoreBridge", "OfflineStore", "RemindersModel",
                "TestSupport",
            ]
        ),
        .testTarget(
            name: "OfflineStoreTests",
            dependencies: [
                "OfflineStore", "OfflineStoreTesting", "RemindersModel", "SyncProtocol", "TestSupport",
                // The sync client's state the change log's tests read and write (SyncState, rejected changes).
                "SyncClient",
                // The layers themselves, for the tests that reach their internals (`@testable import`).
                "OfflineStoreSQLite", "OfflineStoreMigrations", "OfflineStoreChangeLog",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
