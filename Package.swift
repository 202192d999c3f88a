// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "OfflineStore",
    products: [
        .library(name: "OfflineStore", targets: ["OfflineStore"]),
        .executable(name: "reminders", targets: ["Reminders"]),
        .executable(name: "ostore-bench", targets: ["ostore-bench"]),
    ],
    targets: [
        // SQLite from Debian's libsqlite3-dev, plus typed shims for its variadic functions.
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .target(
            name: "OfflineStore",
            dependencies: ["CSQLite"]
        ),
        // The physical limit the benchmark compares against: the same workloads in plain C.
        .target(
            name: "CReferenceBench",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        .executableTarget(
            name: "ostore-bench",
            dependencies: ["OfflineStore", "CReferenceBench", "RemindersModel"]
        ),
        // The sample app's schema history, a library so tests and the benchmark can use it.
        .target(
            name: "RemindersModel",
            dependencies: ["OfflineStore"],
            path: "Samples/RemindersModel"
        ),
        .executableTarget(
            name: "Reminders",
            dependencies: ["OfflineStore", "RemindersModel"],
            path: "Samples/Reminders"
        ),
        .testTarget(
            name: "OfflineStoreTests",
            dependencies: ["OfflineStore", "RemindersModel"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
