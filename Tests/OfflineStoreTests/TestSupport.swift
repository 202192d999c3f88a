import Dispatch
import Foundation
import OfflineStore

/// A unique directory under the system temporary directory, removed with everything in it when released.
///
/// Every test that touches the file system makes its own, so tests running in parallel never share files.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("OfflineStoreTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    /// The path of a file (or directory) named `name` inside the directory.
    func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }
}

extension Database {
    /// The first column of the first row of `sql` (nil for no row or NULL), read through a cursor.
    ///
    /// Tests use it to check side effects without depending on `fetchValue`, which has its own tests.
    func scalar<Value: DatabaseValueConvertible>(_ type: Value.Type, _ sql: SQL) throws -> Value? {
        let cursor = try fetchCursor(sql)
        return try withExtendedLifetime(cursor) {
            guard let row = try cursor.next() else { return nil }
            return try row.decode(Value?.self, at: 0)
        }
    }

    /// `SELECT count(*) FROM table`, read through a cursor.
    func count(_ table: String) throws -> Int {
        try scalar(Int.self, "SELECT count(*) FROM \(identifier: table)") ?? -1
    }
}

/// A value shared with `@Sendable` closures (hooks, SQL functions, other threads), behind a lock.
///
/// `@unchecked Sendable` is safe because `storage` is only touched while `lock` is held. It is an `NSLock`
/// rather than `Synchronization.Mutex` because ConcurrencyTests run under the thread sanitizer, which on Linux
/// does not see a contended `Mutex`'s futex wait and reports false races; it does see pthread locks.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: Value

    init(_ value: Value) {
        storage = value
    }

    var value: Value {
        lock.withLock { storage }
    }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        lock.withLock { body(&storage) }
    }
}

/// Thrown when work on another thread did not finish in time (a deadlock or a blocked call).
struct TimedOut: Error, CustomStringConvertible {
    let what: String
    var description: String { "timed out waiting for \(what)" }
}

/// Runs `work` on a dispatch thread and waits at most `seconds` for it, so a deadlock fails the test
/// instead of hanging the run.
func onAnotherThread<Output: Sendable>(
    _ what: String, timeout seconds: Double = 20, _ work: @escaping @Sendable () throws -> Output
) throws -> Output {
    let result = Locked<Result<Output, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let outcome = Result { try work() }
        result.withLock { $0 = outcome }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success, let outcome = result.value else {
        throw TimedOut(what: what)
    }
    return try outcome.get()
}

/// An executable product of this package (`reminders`, `ostore`), from the build products
/// directory the test bundle runs in (`swift build --build-tests` builds every product).
func builtProduct(_ name: String, filePath: String = #filePath) throws -> URL {
    var directories: [URL] = []
    if let executable = Bundle.main.executableURL {
        var directory = executable.deletingLastPathComponent()
        // From inside a `.xctest` bundle directory, up to the build products folder.
        while ["xctest"].contains(directory.pathExtension)
            || ["MacOS", "Contents"].contains(directory.lastPathComponent)
        {
            directory.deleteLastPathComponent()
        }
        directories.append(directory)
    }
    let packageRoot = URL(fileURLWithPath: filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    directories.append(packageRoot.appendingPathComponent(".build/debug"))
    for directory in directories {
        let candidate = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw MissingProduct(name: name, searched: directories.map(\.path))
}

struct MissingProduct: Error, CustomStringConvertible {
    let name: String
    let searched: [String]
    var description: String {
        "the \(name) executable is not built (looked in \(searched.joined(separator: ", "))); run `swift build --build-tests` first"
    }
}
