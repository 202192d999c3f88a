import Foundation
import OfflineStore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Bad input and defaults")
struct BadInputTests {
    @Test func invalidSQLNamesTheSQL() throws {
        let db = try Database.inMemory()
        let sql = "SELEKT * FROM nowhere"
        let error = try #require(throws: DatabaseError.self) { try db.execute(sql: sql) }
        #expect(error.resultCode == .error)
        #expect(error.message.contains("syntax error"))
        #expect(error.sql == sql)
        #expect(error.description.contains(sql))

        let missingTable = try #require(throws: DatabaseError.self) { try db.fetchCursor("SELECT * FROM nowhere") }
        #expect(missingTable.message.contains("no such table: nowhere"))
        #expect(missingTable.sql == "SELECT * FROM nowhere")
    }

    @Test func doubleQuotedStringsAreIdentifiers() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (x TEXT)")
        // With SQLite's legacy quirk "abc" would silently be the string 'abc'; here it is an unknown column.
        let error = try #require(throws: DatabaseError.self) { try db.execute("INSERT INTO t VALUES (\"abc\")") }
        #expect(error.message.contains("no such column"))
    }

    @Test func fileThatIsNotADatabase() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("garbage.sqlite")
        let garbage = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: path))

        var matched = false
        do {
            _ = try Database(path: path)
            Issue.record("opening garbage should fail")
        } catch DatabaseError.notADatabase {
            matched = true
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        #expect(matched)
        let error = try #require(throws: DatabaseError.self) { try Database(path: path) }
        #expect(error.resultCode == .notADatabase)
        #expect(error.description.contains("not an SQLite database"))
        // The file is left as it was.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test func missingDirectoryCannotOpen() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("does/not/exist/db.sqlite")
        let error = try #require(throws: DatabaseError.self) { try Database(path: path) }
        #expect(error.primaryResultCode == .cantOpen)
        #expect(error.message.contains(path))
        // The system's own reason, which tells a missing directory from a permission or a full disk.
        #expect(error.systemErrorNumber == ENOENT)
        #expect(error.description.contains("(system error \(ENOENT): No such file or directory)"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("does")))
    }

    @Test func directoryIsNotADatabaseFile() throws {
        let directory = try TemporaryDirectory()
        let error = try #require(throws: DatabaseError.self) { try Database(path: directory.url.path) }
        #expect(error.primaryResultCode == .cantOpen)
    }

    @Test func readonlyConnectionRefusesWrites() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("readonly.sqlite")
        do {
            let writer = try Database(path: path)
            try writer.execute("CREATE TABLE t (x)")
            try writer.execute("INSERT INTO t VALUES (\(1))")
            try writer.close()
        }
        var configuration = Configuration()
        configuration.readonly = true
        let db = try Database(path: path, configuration: configuration)
        #expect(try db.fetchValue(Int.self, "SELECT x FROM t") == 1)

        var matched = false
        do {
            try db.execute("INSERT INTO t VALUES (\(2))")
        } catch DatabaseError.readonly {
            matched = true
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        #expect(matched)
        let create = try #require(throws: DatabaseError.self) { try db.execute("CREATE TABLE u (y)") }
        #expect(create.primaryResultCode == .readonly)
        #expect(create.description.contains("read-only"))
        #expect(try db.fetchAll(Int.self, "SELECT x FROM t") == [1])
    }

    @Test func readonlyConnectionDoesNotCreateAFile() throws {
        let directory = try TemporaryDirectory()
        var configuration = Configuration()
        configuration.readonly = true
        let error = try #require(throws: DatabaseError.self) {
            try Database(path: directory.path("absent.sqlite"), configuration: configuration)
        }
        #expect(error.primaryResultCode == .cantOpen)
        #expect(!FileManager.default.fileExists(atPath: directory.path("absent.sqlite")))
    }

    /// File permissions do not stop root, so this runs only for other users; `readonlyConnectionRefusesWrites`
    /// covers read-only access for everyone.
    @Test(.enabled(if: geteuid() != 0, "root ignores file permissions"))
    func readonlyDirectoryCannotCreateADatabase() throws {
        let directory = try TemporaryDirectory()
        let locked = directory.path("locked")
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: locked)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: locked) }
        let error = try #require(throws: DatabaseError.self) { try Database(path: locked + "/db.sqlite") }
        #expect(error.primaryResultCode == .cantOpen)
    }

    @Test func foreignKeysAreOnByDefault() throws {
        let db = try Database.inMemory()
        #expect(try db.fetchValue(Int.self, "PRAGMA foreign_keys") == 1)
        try db.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
        try db.execute("CREATE TABLE c (pid INTEGER REFERENCES p(id))")
        let error = try #require(throws: DatabaseError.self) { try db.execute("INSERT INTO c VALUES (\(1))") }
        #expect(error.resultCode == .constraintForeignKey)

        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let lax = try Database.inMemory(configuration: configuration)
        #expect(try lax.fetchValue(Int.self, "PRAGMA foreign_keys") == 0)
        try lax.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
        try lax.execute("CREATE TABLE c (pid INTEGER REFERENCES p(id))")
        try lax.execute("INSERT INTO c VALUES (\(1))")
        #expect(try lax.count("c") == 1)
    }

    @Test func fileDatabasesUseWAL() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("wal.sqlite")
        let db = try Database(path: path)
        #expect(try db.fetchValue(String.self, "PRAGMA journal_mode") == "wal")
        #expect(try db.fetchValue(Int.self, "PRAGMA synchronous") == 1)
        #expect(try db.fetchValue(Int.self, "PRAGMA foreign_keys") == 1)
        try db.execute("CREATE TABLE t (x)")
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        #expect(db.path == path)

        let memory = try Database.inMemory()
        #expect(try memory.fetchValue(String.self, "PRAGMA journal_mode") == "memory")

        var configuration = Configuration()
        configuration.journalMode = .delete
        configuration.synchronous = .full
        let classic = try Database(path: directory.path("classic.sqlite"), configuration: configuration)
        #expect(try classic.fetchValue(String.self, "PRAGMA journal_mode") == "delete")
        #expect(try classic.fetchValue(Int.self, "PRAGMA synchronous") == 2)
    }

    @Test func thePageCacheIs8MiBUnlessConfigured() throws {
        let directory = try TemporaryDirectory()
        let db = try Database(path: directory.path("cache.sqlite"))
        #expect(try db.fetchValue(Int.self, "PRAGMA cache_size") == -8_192)

        var configuration = Configuration()
        configuration.pageCacheKiB = 512
        let small = try Database(path: directory.path("small.sqlite"), configuration: configuration)
        #expect(try small.fetchValue(Int.self, "PRAGMA cache_size") == -512)
        // The metadatabase keeps its own floor of 16 MiB whatever main's.
        try Metadatabase.attach(to: small)
        #expect(try small.fetchValue(Int.self, "PRAGMA ostore_meta.cache_size") == -16_384)
        // What the app's own preparation sets comes last and wins.
        configuration.prepareDatabase = { db in try db.execute(sql: "PRAGMA cache_size = -1024") }
        let prepared = try Database(path: directory.path("prepared.sqlite"), configuration: configuration)
        #expect(try prepared.fetchValue(Int.self, "PRAGMA cache_size") == -1_024)
    }

    @Test func busyTimeoutIsApplied() throws {
        var configuration = Configuration()
        configuration.busyTimeout = .milliseconds(1_250)
        let db = try Database.inMemory(configuration: configuration)
        #expect(try db.fetchValue(Int.self, "PRAGMA busy_timeout") == 1_250)
    }

    @Test func prepareDatabaseRunsAndItsFailureFailsTheOpen() throws {
        var configuration = Configuration()
        configuration.prepareDatabase = { db in
            try db.execute("CREATE TEMP TABLE prepared (x)")
        }
        let db = try Database.inMemory(configuration: configuration)
        #expect(try db.tableExists("prepared", schema: "temp"))

        configuration.prepareDatabase = { db in try db.execute("NOT SQL") }
        let error = try #require(throws: DatabaseError.self) { try Database.inMemory(configuration: configuration) }
        #expect(error.message.contains("Configuration.prepareDatabase failed"))
        #expect(error.sql == "NOT SQL")
    }

    @Test func textThatIsNotUTF8IsAConversionError() throws {
        let db = try Database.inMemory()
        let error = try #require(throws: DatabaseError.self) {
            try db.fetchAll(String.self, "SELECT CAST(x'FF41' AS TEXT)")
        }
        #expect(error.resultCode == .mismatch)
        #expect(error.message.contains("not valid UTF-8"))
        #expect(try db.fetchAll(Data.self, "SELECT CAST(CAST(x'FF41' AS TEXT) AS BLOB)") == [Data([0xFF, 0x41])])
    }

    @Test func textInvalidOnlyAfterALongASCIIRunIsAConversionErrorToo() throws {
        let db = try Database.inMemory()
        // Twenty ASCII bytes (past the 15 of an inline string, past two 8-byte words), then a lone 0xFF.
        let sql: SQL = "SELECT CAST(x'4142434445464748494A4B4C4D4E4F5051525354FF' AS TEXT)"
        let error = try #require(throws: DatabaseError.self) { try db.fetchAll(String.self, sql) }
        #expect(error.message.contains("not valid UTF-8"))
        #expect(
            try db.fetchAll(String.self, "SELECT CAST(x'4142434445464748494A4B4C4D4E4F5051525354' AS TEXT)") == [
                "ABCDEFGHIJKLMNOPQRST"
            ])
    }

    /// One invalid byte at every position of inline-sized and longer text (in the first or the last
    /// word the reader checks), and after a NUL, where a C-string reader would stop looking.
    @Test func invalidByteAnywhereInTextIsAConversionError() throws {
        let db = try Database.inMemory()
        func expectInvalid(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let hex = bytes.map { String(format: "%02X", $0) }.joined()
            let error = try #require(throws: DatabaseError.self, sourceLocation: sourceLocation) {
                try db.fetchAll(String.self, SQL(sql: "SELECT CAST(x'\(hex)' AS TEXT)"))
            }
            #expect(error.message.contains("not valid UTF-8"), "\(hex): \(error)", sourceLocation: sourceLocation)
        }
        for length in [1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 24] {
            for position in 0..<length {
                var bytes = [UInt8](repeating: UInt8(ascii: "A"), count: length)
                bytes[position] = 0xFF
                try expectInvalid(bytes)
            }
        }
        try expectInvalid([0x41, 0x00, 0x42, 0xFF])
        try expectInvalid([0x41, 0x00] + [UInt8](repeating: 0x42, count: 20) + [0xFF])
        try expectInvalid([0xC3, 0xA9, 0x00, 0xC3])
    }

    @Test func hugeAndOddValues() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (v)")
        let big = String(repeating: "é", count: 1_000_000)
        try db.execute("INSERT INTO t VALUES (\(big))")
        #expect(try db.fetchAll(String.self, "SELECT v FROM t") == [big])
        let blob = Data(repeating: 0, count: 2_000_000)
        try db.execute("UPDATE t SET v = \(blob)")
        #expect(try db.fetchAll(Data.self, "SELECT v FROM t") == [blob])
    }

    /// Regression: a huge busy timeout overflowed the millisecond conversion and trapped.
    @Test func hugeBusyTimeoutSaturates() throws {
        var configuration = Configuration()
        configuration.busyTimeout = .seconds(Int64.max / 100)
        let db = try Database.inMemory(configuration: configuration)
        #expect(try db.fetchValue(Int.self, "SELECT 1") == 1)
    }

    /// Regression: `close()` with an open transaction and a statement still held kept the
    /// write lock (sqlite3_close_v2 finishes closing only when the last statement goes).
    @Test func closeReleasesTheWriteLockEvenWithStatementsHeld() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("locked.sqlite")
        let first = try Database(path: path)
        try first.execute("CREATE TABLE t (x INTEGER)")
        try first.execute("BEGIN IMMEDIATE")
        try first.execute("INSERT INTO t VALUES (\(1))")
        let held = try first.makeStatement("SELECT x FROM t")
        try first.close()

        var configuration = Configuration()
        configuration.busyTimeout = .milliseconds(100)
        let second = try Database(path: path, configuration: configuration)
        try second.execute("INSERT INTO t VALUES (\(2))")
        #expect(try second.fetchAll(Int.self, "SELECT x FROM t") == [2])
        #expect(throws: DatabaseError.self) { try held.execute() }
    }

    /// Regression: named arguments were missing from the error context.
    @Test func namedArgumentsAppearInErrorsOnOptIn() throws {
        var configuration = Configuration()
        configuration.publicStatementArguments = true
        let db = try Database.inMemory(configuration: configuration)
        try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        try db.execute(sql: "INSERT INTO t (id) VALUES (:id)", arguments: ["id": 7])
        let error = try #require(throws: DatabaseError.self) {
            try db.execute(sql: "INSERT INTO t (id) VALUES (:id)", arguments: ["id": 7])
        }
        #expect(error.arguments == [.integer(7)])
        #expect(error.description.contains("with arguments [7]"), "\(error)")
    }
}
