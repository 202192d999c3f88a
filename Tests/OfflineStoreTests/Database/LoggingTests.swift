import Foundation
import OfflineStore
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A log handler that keeps every message, safe to call from any thread.
final class CollectingLogHandler: LogHandler {
    struct Entry: Sendable, Equatable {
        var level: LogLevel
        var message: String
        var metadata: [String: String]
    }

    let minimumLevel: LogLevel
    private let storage = Mutex<[Entry]>([])

    init(minimumLevel: LogLevel = .trace) {
        self.minimumLevel = minimumLevel
    }

    func log(level: LogLevel, _ message: String, metadata: [String: String]) {
        storage.withLock { $0.append(Entry(level: level, message: message, metadata: metadata)) }
    }

    var entries: [Entry] {
        storage.withLock { $0 }
    }

    var messages: [String] {
        entries.map(\.message)
    }
}

@Suite("Logging")
struct LoggingTests {
    private struct Stop: Error, CustomStringConvertible {
        var description: String { "stopped on purpose" }
    }

    /// Opens, rolls back and closes: the operations the library logs.
    static func exercise(_ db: Database) throws {
        try db.execute("CREATE TABLE t (x)")
        #expect(throws: Stop.self) {
            try db.transaction { db in
                try db.execute("INSERT INTO t VALUES (\(1))")
                throw Stop()
            }
        }
        try db.close()
    }

    @Test func handlerReceivesMessages() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("logged.sqlite")
        let handler = CollectingLogHandler()
        var configuration = Configuration()
        configuration.logHandler = handler
        let db = try Database(path: path, configuration: configuration)

        let opened = try #require(handler.entries.first)
        #expect(opened.message == "opened database")
        #expect(opened.level == .debug)
        #expect(opened.metadata["path"] == path)

        try Self.exercise(db)
        #expect(handler.messages == ["opened database", "rolling back after an error", "closed database"])
        let rollback = handler.entries[1]
        #expect(rollback.metadata["error"] == "stopped on purpose")
        #expect(rollback.metadata["path"] == path)
    }

    @Test func handlerOnlyHearsItsOwnConnection() throws {
        let handler = CollectingLogHandler()
        var configuration = Configuration()
        configuration.logHandler = handler
        let logged = try Database.inMemory(configuration: configuration)
        let silent = try Database.inMemory()
        try Self.exercise(silent)
        #expect(handler.messages == ["opened database"])
        try logged.close()
        #expect(handler.messages == ["opened database", "closed database"])
    }

    @Test func messagesBelowTheMinimumLevelAreDropped() throws {
        // The default minimum level is info; the library's messages above are debug.
        struct DefaultLevelHandler: LogHandler {
            let inner = CollectingLogHandler()
            func log(level: LogLevel, _ message: String, metadata: [String: String]) {
                inner.log(level: level, message, metadata: metadata)
            }
        }
        let handler = DefaultLevelHandler()
        #expect(handler.minimumLevel == .info)
        var configuration = Configuration()
        configuration.logHandler = handler
        try Self.exercise(try Database.inMemory(configuration: configuration))
        #expect(handler.inner.entries.isEmpty)

        let debug = CollectingLogHandler(minimumLevel: .debug)
        configuration.logHandler = debug
        try Self.exercise(try Database.inMemory(configuration: configuration))
        #expect(debug.messages.count == 3)
    }

    @Test func logLevelsAreOrdered() {
        #expect(LogLevel.trace < .debug)
        #expect(LogLevel.debug < .info)
        #expect(LogLevel.warning < .error)
        let levels: [LogLevel] = [.error, .trace, .warning, .debug, .notice, .info]
        #expect(levels.sorted().map(\.description) == ["trace", "debug", "info", "notice", "warning", "error"])
    }

    /// Without a handler the library writes nothing to standard output or standard error; the standard-error
    /// handler (the positive control) shows that the capture would have seen it.
    ///
    /// Other tests run at the same time and the test runner reports on these descriptors too, so the check looks
    /// for what the library would write (its messages, the database path), not for an empty capture.
    @Test func nothingIsLoggedWithoutAHandler() throws {
        #expect(Configuration().logHandler == nil)
        let directory = try TemporaryDirectory()
        let silentPath = directory.path("silent-\(UUID().uuidString).sqlite")

        let silentOutput = try captureOutput(in: directory) {
            try Self.exercise(try Database(path: silentPath))
            try Self.exercise(try Database.inMemory())
        }
        for text in ["opened database", "closed database", "rolling back", silentPath, "stopped on purpose"] {
            #expect(!silentOutput.contains(text), "found \(text) in \(silentOutput)")
        }

        var configuration = Configuration()
        configuration.logHandler = StandardErrorLogHandler(label: "test-control", minimumLevel: .debug)
        let loudPath = directory.path("loud-\(UUID().uuidString).sqlite")
        let loudOutput = try captureOutput(in: directory) {
            try Self.exercise(try Database(path: loudPath, configuration: configuration))
        }
        #expect(loudOutput.contains("test-control debug: opened database path=\(loudPath)"), "\(loudOutput)")
        #expect(loudOutput.contains("test-control debug: rolling back after an error"), "\(loudOutput)")
        #expect(loudOutput.contains("test-control debug: closed database path=\(loudPath)"), "\(loudOutput)")
    }

    /// Runs `body` with standard output and standard error redirected to files and returns what was written.
    /// The captured text is written back to the real descriptors afterwards, so no report of the test run is lost.
    private func captureOutput(in directory: TemporaryDirectory, _ body: () throws -> Void) throws -> String {
        var redirections: [(descriptor: Int32, saved: Int32, path: String)] = []
        fflush(nil)
        for descriptor in [STDOUT_FILENO, STDERR_FILENO] {
            let path = directory.path("capture-\(descriptor)-\(UUID().uuidString).txt")
            let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            let saved = dup(descriptor)
            try #require(file >= 0 && saved >= 0)
            dup2(file, descriptor)
            close(file)
            redirections.append((descriptor, saved, path))
        }
        var captured: [String] = []
        do {
            defer {
                fflush(nil)
                for redirection in redirections {
                    dup2(redirection.saved, redirection.descriptor)
                    close(redirection.saved)
                }
            }
            try body()
        }
        for redirection in redirections {
            let data = try Data(contentsOf: URL(fileURLWithPath: redirection.path))
            FileHandle(fileDescriptor: redirection.descriptor).write(data)
            captured.append(String(decoding: data, as: UTF8.self))
        }
        return captured.joined()
    }
}
