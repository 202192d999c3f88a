import Foundation
import OfflineStore
import Testing

@testable import OfflineStoreSQLite

/// Arguments gathered in one reused buffer and bound in place (`SQLITE_STATIC`).
@Suite("Bulk arguments")
struct BulkArgumentsTests {
    /// Every kind of value, empty text and blob included, is stored as `execute(values...)`
    /// stores it, row after row through the same buffers and the same statement.
    @Test func rowsBoundInPlaceAreStoredAsTheCopyingBindStoresThem() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (i INTEGER, name TEXT, photo BLOB, note TEXT, n INTEGER)")
        let insert = try db.cachedStatement("INSERT INTO t VALUES (?, ?, ?, ?, ?)")
        let rows: [(Int64?, String, Data, String)] = [
            (1, "ünïcode ✓", Data([0, 0xFF, 0x80]), ""), (nil, "", Data(), "x"),
            (Int64.min, String(repeating: "long ", count: 200), Data(repeating: 7, count: 5000), "last"),
        ]
        var arguments = BulkArguments()
        for (index, row) in rows.enumerated() {
            arguments.removeAll()
            arguments.append(row.0)
            arguments.append(text: row.1)
            // A blob as Data or as bytes.
            if index.isMultiple(of: 2) { arguments.append(blob: row.2) } else { arguments.append(blob: [UInt8](row.2)) }
            arguments.append(text: row.3)
            arguments.appendNull()
            #expect(arguments.count == 5)
            try insert.execute(arguments)
        }
        try db.execute("CREATE TABLE copied (i INTEGER, name TEXT, photo BLOB, note TEXT, n INTEGER)")
        let copying = try db.cachedStatement("INSERT INTO copied VALUES (?, ?, ?, ?, ?)")
        for row in rows { try copying.execute(row.0, row.1, row.2, row.3, Int64?.none) }
        let select = "SELECT i, name, photo, note, n, typeof(name), typeof(photo) FROM"
        let inPlace = try db.fetchAll(SQL(sql: "\(select) t ORDER BY rowid")).map { try $0.values() }
        let copied = try db.fetchAll(SQL(sql: "\(select) copied ORDER BY rowid")).map { try $0.values() }
        #expect(inPlace == copied)
        #expect(inPlace[1][5] == .text("text") && inPlace[1][6] == .text("blob"))
    }

    /// Any ``DatabaseValue``, reals included (the remote apply binds pulled rows this way), is
    /// stored as the copying bind stores it, with its storage class.
    @Test func databaseValuesOfEveryKindAreStoredAsTheCopyingBindStoresThem() throws {
        let db = try Database.inMemory()
        // No declared type: no affinity converts a value on its way in.
        try db.execute("CREATE TABLE t (v)")
        try db.execute("CREATE TABLE copied (v)")
        let values: [DatabaseValue] = [
            .null, .integer(-7), .real(2.5), .real(-0.0), .real(.infinity), .text("ünïcode"), .text(""),
            .blob(Data([1, 2, 3])), .blob(Data()),
        ]
        var arguments = BulkArguments()
        for value in values { arguments.append(value) }
        let placeholders = Array(repeating: "(?)", count: values.count).joined(separator: ", ")
        try db.cachedStatement("INSERT INTO t VALUES \(placeholders)").execute(arguments)
        for value in values { try db.cachedStatement("INSERT INTO copied VALUES (?)").execute(value) }
        let select = "SELECT v, typeof(v) FROM"
        let inPlace = try db.fetchAll(SQL(sql: "\(select) t ORDER BY rowid")).map { try $0.values() }
        let copied = try db.fetchAll(SQL(sql: "\(select) copied ORDER BY rowid")).map { try $0.values() }
        #expect(inPlace == copied)
        #expect(
            inPlace.map { $0[1] }
                == ["null", "integer", "real", "real", "real", "text", "text", "blob", "blob"].map {
                    DatabaseValue.text($0)
                })
    }

    /// NaN is refused as the copying bind refuses it (SQLite would store NULL), and nothing of
    /// the run is left bound or written.
    @Test func aNaNIsRefusedAsTheCopyingBindRefusesIt() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (a TEXT, b REAL)")
        var arguments = BulkArguments()
        arguments.append(text: "before")
        arguments.append(real: .nan)
        let insert = try db.cachedStatement("INSERT INTO t VALUES (?, ?)")
        let error = try #require(throws: DatabaseError.self) { try insert.execute(arguments) }
        #expect(error.resultCode == .mismatch)
        #expect(error.message.contains("NaN"))
        #expect(try insert.step(arguments: nil) == false)
        insert.reset()
        #expect(try db.fetchAll(String?.self, "SELECT a FROM t") == [nil])
    }

    /// A count that does not match the statement's parameters is refused before anything is bound.
    @Test func aWrongNumberOfArgumentsIsRefused() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
        var arguments = BulkArguments()
        arguments.append(1)
        let error = try #require(throws: DatabaseError.self) {
            try db.cachedStatement("INSERT INTO t VALUES (?, ?)").execute(arguments)
        }
        #expect(error.resultCode == .range)
        #expect(try db.fetchValue(Int.self, "SELECT count(*) FROM t") == 0)
    }
    /// Regression (review): a run refused because SQLite had rolled the transaction back
    /// (`RAISE(ROLLBACK)`) returned before its reset, leaving the statement bound into the
    /// arguments' buffer, which the next row reuses or which is freed.
    @Test func aRunRefusedAfterARollbackLeavesNothingBound() throws {
        let db = try Database.inMemory()
        try db.execute("CREATE TABLE t (x TEXT)")
        try db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON t WHEN NEW.x = 'boom' BEGIN SELECT RAISE(ROLLBACK, 'refused'); END")
        let insert = try db.cachedStatement("INSERT INTO t VALUES (?)")
        var arguments = BulkArguments()
        _ = try? db.transaction { _ in
            arguments.append(text: "boom")
            #expect(throws: DatabaseError.self) { try insert.execute(arguments) }
            arguments.removeAll()
            arguments.append(text: "still bound")
            // The transaction is gone: the run is refused after its arguments were bound.
            let refused = try #require(throws: DatabaseError.self) { try insert.execute(arguments) }
            #expect(refused.resultCode == .abort)
        }
        // Stepped with nothing bound again, it inserts NULL: no binding was left behind.
        #expect(try insert.step(arguments: nil) == false)
        insert.reset()
        #expect(try db.fetchAll(String?.self, "SELECT x FROM t") == [nil])
    }
}
