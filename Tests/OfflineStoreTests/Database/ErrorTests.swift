import Foundation
import OfflineStore
import Testing

/// An error that is not a DatabaseError, for pattern-matching checks.
private struct NotADatabaseError: Error {}

@Suite("Database errors")
struct ErrorTests {
    static func makeDatabase(_ configuration: Configuration = Configuration()) throws -> Database {
        let db = try Database(path: ":memory:", configuration: configuration)
        try db.executeScript(
            """
            CREATE TABLE parents (id INTEGER PRIMARY KEY);
            CREATE TABLE children (id INTEGER PRIMARY KEY, parentID INTEGER REFERENCES parents(id),
                                   secret TEXT UNIQUE, CHECK (length(secret) < 100));
            """)
        return db
    }

    /// Which `catch` clause an error lands in, to prove the pattern matching of `catch DatabaseError.x`.
    static func clause(_ body: () throws -> Void) -> String {
        do {
            try body()
            return "no error"
        } catch DatabaseError.constraintForeignKey {
            return "foreign key"
        } catch DatabaseError.constraintUnique {
            return "unique"
        } catch DatabaseError.constraint {
            return "other constraint"
        } catch DatabaseError.misuse {
            return "misuse"
        } catch {
            return "other: \(error)"
        }
    }

    @Test func catchByExtendedCode() throws {
        let db = try Self.makeDatabase()
        try db.execute("INSERT INTO children (id, secret) VALUES (\(1), \("a"))")
        #expect(Self.clause { try db.execute("INSERT INTO children (parentID) VALUES (\(42))") } == "foreign key")
        #expect(Self.clause { try db.execute("INSERT INTO children (secret) VALUES (\("a"))") } == "unique")
        #expect(Self.clause { try db.execute("INSERT INTO children (id) VALUES (\(1))") } == "other constraint")
        #expect(Self.clause { try db.execute("INSERT INTO children (id) VALUES (\(2))") } == "no error")
        #expect(
            Self.clause {
                try db.close()
                try db.close()
            } == "misuse")
    }

    @Test func primaryCodeMatchesExtendedCodes() throws {
        let db = try Self.makeDatabase()
        var matched = false
        do {
            try db.execute("INSERT INTO children (parentID) VALUES (\(42))")
        } catch DatabaseError.constraint {
            matched = true
        } catch {
            Issue.record("unexpected error: \(error)")
        }
        #expect(matched)
        let long = String(repeating: "x", count: 200)
        #expect(Self.clause { try db.execute("INSERT INTO children (secret) VALUES (\(long))") } == "other constraint")

        #expect(ResultCode.constraint ~= ResultCode.constraintForeignKey)
        #expect(ResultCode.constraint ~= ResultCode.constraintCommitHook)
        #expect(!(ResultCode.constraintUnique ~= ResultCode.constraintForeignKey))
        #expect(!(ResultCode.constraintForeignKey ~= ResultCode.constraint))
        #expect(!(ResultCode.busy ~= ResultCode.constraintForeignKey))
        #expect(ResultCode.busy ~= ResultCode.busySnapshot)
        #expect(ResultCode.constraintForeignKey.primary == .constraint)
        #expect(ResultCode.constraint.isPrimary)
        #expect(!ResultCode.constraintForeignKey.isPrimary)

        #expect(!(ResultCode.error ~= (NotADatabaseError() as any Error)))
        let error = DatabaseError(resultCode: .constraintCheck, message: "m")
        #expect(ResultCode.constraint ~= (error as any Error))
        #expect(error.primaryResultCode == .constraint)
    }

    @Test func errorCarriesCodeMessageAndSQL() throws {
        let db = try Self.makeDatabase()
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("INSERT INTO children (parentID, secret) VALUES (\(42), \("s"))")
        }
        #expect(error.resultCode == .constraintForeignKey)
        #expect(error.primaryResultCode == .constraint)
        #expect(error.message.contains("FOREIGN KEY constraint failed"))
        #expect(error.sql == "INSERT INTO children (parentID, secret) VALUES (?, ?)")
        #expect(error.arguments == [.integer(42), .text("s")])
        // No operating system call failed: no stale errno is shown.
        #expect(error.systemErrorNumber == nil)

        let description = error.description
        #expect(!description.contains("system error"))
        #expect(description.contains("SQLITE_CONSTRAINT_FOREIGNKEY (787)"))
        #expect(description.contains("INSERT INTO children (parentID, secret) VALUES (?, ?)"))
        #expect(description.contains("defer_foreign_keys"))
    }

    @Test func descriptionHidesArgumentsByDefault() throws {
        let db = try Self.makeDatabase()
        let secret = "hunter2-\(UUID().uuidString)"
        try db.execute("INSERT INTO children (secret) VALUES (\(secret))")
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("INSERT INTO children (id, secret) VALUES (\(7), \(secret))")
        }
        #expect(error.resultCode == .constraintUnique)
        #expect(!error.showsArguments)
        #expect(!error.description.contains(secret))
        #expect(!"\(error)".contains("hunter2"))
        #expect(error.description.contains("2 argument(s) (hidden"))
        // The values are still there for code that inspects the error.
        #expect(error.arguments == [.integer(7), .text(secret)])
    }

    @Test func descriptionShowsArgumentsWhenOptedIn() throws {
        var configuration = Configuration()
        configuration.publicStatementArguments = true
        let db = try Self.makeDatabase(configuration)
        try db.execute("INSERT INTO children (secret) VALUES (\("it's"))")
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("INSERT INTO children (id, secret, parentID) VALUES (\(7), \("it's"), \(Int?.none))")
        }
        #expect(error.showsArguments)
        #expect(error.description.contains("with arguments [7, 'it''s', NULL]"), "\(error)")
        #expect(!error.description.contains("hidden"))
    }

    @Test func blobArgumentsAreShownAsHex() throws {
        var configuration = Configuration()
        configuration.publicStatementArguments = true
        let db = try Self.makeDatabase(configuration)
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("INSERT INTO children (parentID) VALUES (\(Data([0xAB, 0x01])))")
        }
        #expect(error.description.contains("X'AB01'"), "\(error)")
    }

    @Test func libraryErrorsUseTheClosestCode() throws {
        let db = try Self.makeDatabase()
        let conversion = try #require(throws: DatabaseError.self) { try db.fetchAll(Int.self, "SELECT 'x'") }
        #expect(conversion.resultCode == .mismatch)
        #expect(conversion.description.contains("SQLITE_MISMATCH"))
        #expect(conversion.sql == "SELECT 'x'")

        let misuse = try #require(throws: DatabaseError.self) { try db.makeStatement("SELECT 1; SELECT 2") }
        #expect(misuse.description.contains("SQLITE_MISUSE"))
        #expect(misuse.description.contains("programming error"))
    }

    @Test func resultCodeDescriptions() {
        #expect(ResultCode.constraintUnique.description.contains("SQLITE_CONSTRAINT_UNIQUE (2067)"))
        #expect(ResultCode.busy.description.contains("SQLITE_BUSY (5)"))
        // An I/O error names the operation that failed (this one was seen in a test run as "SQLite code 4874").
        #expect(ResultCode(rawValue: 4874).description.contains("SQLITE_IOERR_SHMSIZE (4874)"))
        #expect(ResultCode(rawValue: 10 | (33 << 8)).description.contains("SQLITE_IOERR_CORRUPTFS (8458)"))
        #expect(ResultCode(rawValue: 0x7777).description.hasPrefix("SQLite code 30583"))
    }

    @Test func errorsCrossConcurrencyDomains() async throws {
        let error = DatabaseError(resultCode: .busy, message: "m", sql: "SELECT 1", arguments: [.integer(1)])
        let copy = await Task.detached { error }.value
        #expect(copy.resultCode == .busy)
        #expect(copy.sql == "SELECT 1")
    }
}
