import Foundation
import OfflineStore
import Testing

/// A raw-value enum stored as its INTEGER raw value.
enum Priority: Int, Codable, Sendable, DatabaseValueConvertible {
    case low = 1
    case normal = 2
    case high = 3
}

/// A raw-value enum stored as its TEXT raw value.
enum Flavor: String, Codable, Sendable, DatabaseValueConvertible {
    case vanilla
    case chocolate
}

/// Values go into a real table column and come back out; the column has no declared type, so SQLite keeps the
/// storage class the library bound (no affinity conversion), and `typeof()` shows what was stored.
@Suite("Value conversions")
struct ConversionTests {
    let db: Database

    init() throws {
        db = try Database.inMemory()
        try db.execute("CREATE TABLE t (v)")
    }

    /// Stores `value` as the only row of `t` and reads it back with its SQL storage class.
    func roundTrip<Value: DatabaseValueConvertible>(_ value: Value) throws -> (value: Value, type: String) {
        try db.execute("DELETE FROM t")
        try db.execute("INSERT INTO t (v) VALUES (\(value))")
        let cursor = try db.fetchCursor("SELECT v, typeof(v) FROM t")
        return try withExtendedLifetime(cursor) {
            let row = try #require(try cursor.next())
            let result = (try row.decode(Value.self, at: 0), try row.decode(String.self, at: 1))
            #expect(try cursor.next() == nil)
            return result
        }
    }

    /// Stores a raw SQL value (written as an SQL expression) and decodes it as `Value`.
    func decodeStored<Value: DatabaseValueConvertible>(_ expression: String, as type: Value.Type) throws -> Value {
        try db.execute("DELETE FROM t")
        try db.execute(sql: "INSERT INTO t (v) VALUES (\(expression))")
        let cursor = try db.fetchCursor("SELECT v FROM t")
        return try withExtendedLifetime(cursor) {
            let row = try #require(try cursor.next())
            return try row.decode(Value.self, at: 0)
        }
    }

    /// Expects decoding the stored expression as `Value` to fail with SQLITE_MISMATCH.
    func expectMismatch<Value: DatabaseValueConvertible>(
        _ expression: String, as type: Value.Type, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let error = try #require(throws: DatabaseError.self, sourceLocation: sourceLocation) {
            _ = try decodeStored(expression, as: Value.self)
        }
        #expect(error.resultCode == .mismatch, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains("cannot convert"), "\(error)", sourceLocation: sourceLocation)
        #expect(error.message.contains("column 'v'"), "\(error)", sourceLocation: sourceLocation)
    }

    // MARK: Integers

    @Test(arguments: [0, 1, -1, 42, Int.max, Int.min])
    func int(_ value: Int) throws {
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.type == "integer")
    }

    @Test(arguments: [Int64.min, Int64.min + 1, -1, 0, 1, Int64.max - 1, Int64.max])
    func int64(_ value: Int64) throws {
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.type == "integer")
        // The exact value is in SQL too, not only after the trip back.
        #expect(try db.scalar(String.self, "SELECT CAST(v AS TEXT) FROM t") == String(value))
    }

    @Test func narrowIntegersAtTheirLimits() throws {
        for value in [Int32.min, -1, 0, Int32.max] {
            #expect(try roundTrip(value) == (value, "integer"))
        }
        for value in [Int16.min, -1, 0, Int16.max] {
            #expect(try roundTrip(value) == (value, "integer"))
        }
        for value in [Int8.min, -1, 0, Int8.max] {
            #expect(try roundTrip(value) == (value, "integer"))
        }
        for value in [UInt8.min, 1, UInt8.max] {
            #expect(try roundTrip(value) == (value, "integer"))
        }
        for value in [UInt16.min, 1, UInt16.max] {
            #expect(try roundTrip(value) == (value, "integer"))
        }
        for value in [UInt32.min, 1, UInt32.max] {
            #expect(try roundTrip(value) == (value, "integer"))
        }
        // UInt32.max does not fit an Int32: it is stored as the full 64-bit value.
        #expect(try db.scalar(Int64.self, "SELECT v FROM t") == 4_294_967_295)
    }

    @Test func integersReadFromWholeReals() throws {
        #expect(try decodeStored("2.0", as: Int.self) == 2)
        #expect(try decodeStored("-128.0", as: Int8.self) == -128)
    }

    // MARK: Floating point

    @Test(arguments: [
        0.0, 1.5, -2.25, Double.pi, 1e-300, 1e300, Double.leastNonzeroMagnitude, Double.leastNormalMagnitude,
        Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude, Double.infinity, -Double.infinity,
    ])
    func double(_ value: Double) throws {
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.value.bitPattern == value.bitPattern)
        #expect(stored.type == "real")
    }

    @Test func negativeZeroKeepsItsSign() throws {
        let stored = try roundTrip(-0.0)
        #expect(stored.value == 0)
        #expect(stored.value.sign == .minus)
        #expect(stored.type == "real")
    }

    @Test func doubleReadFromExactInteger() throws {
        #expect(try decodeStored("9007199254740992", as: Double.self) == 9_007_199_254_740_992)
        #expect(try decodeStored("-3", as: Double.self) == -3)
    }

    @Test(arguments: [
        Float(0), 1.5, -0.1, Float.pi, Float.leastNonzeroMagnitude, Float.greatestFiniteMagnitude,
        Float.infinity, -Float.infinity,
    ])
    func float(_ value: Float) throws {
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.type == "real")
    }

    // MARK: Bool, String, bytes

    @Test func bool() throws {
        #expect(try roundTrip(true) == (true, "integer"))
        #expect(try db.scalar(Int.self, "SELECT v FROM t") == 1)
        #expect(try roundTrip(false) == (false, "integer"))
        #expect(try db.scalar(Int.self, "SELECT v FROM t") == 0)
    }

    @Test func emptyString() throws {
        let stored = try roundTrip("")
        #expect(stored.value == "")
        #expect(stored.type == "text")
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM t WHERE v IS NULL") == 0)
    }

    @Test func stringWithNUL() throws {
        let value = "a\u{0}b"
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.value.utf8.count == 3)
        #expect(stored.type == "text")
        // All three bytes are in the database, not only the part before the NUL.
        #expect(try db.scalar(String.self, "SELECT hex(v) FROM t") == "610062")
    }

    @Test func nonASCIIString() throws {
        let value = "héllo 🌍 日本"
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.type == "text")
        #expect(try db.scalar(Int.self, "SELECT length(v) FROM t") == value.unicodeScalars.count)
        #expect(try db.scalar(Int.self, "SELECT length(CAST(v AS BLOB)) FROM t") == value.utf8.count)
    }

    /// Text of every length up to 40 bytes: each word size the reader checks and copies ASCII with
    /// (two words that overlap below 16 bytes), inline and allocated strings, and text whose only
    /// non-ASCII character is at its start or its end.
    @Test func stringsOfEveryLengthUpToForty() throws {
        for length in 0...40 {
            let ascii = String(decoding: (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }, as: UTF8.self)
            #expect(try roundTrip(ascii).value == ascii, "\(length) ASCII bytes")
            guard length >= 2 else { continue }
            for text in [String(ascii.dropLast(2)) + "é", "é" + String(ascii.dropFirst(2))] {
                #expect(text.utf8.count == length)
                #expect(try roundTrip(text).value == text, "\(length) bytes with an é")
            }
        }
    }

    /// A NUL inside text past the inline size, and inside non-ASCII text: all the bytes come back.
    @Test func longAndNonASCIIStringsWithNUL() throws {
        for value in ["0123456789\u{0}abcdefghij", "é\u{0}x", "\u{0}0123456789abcdefghij"] {
            let stored = try roundTrip(value)
            #expect(stored.value == value)
            #expect(stored.value.utf8.count == value.utf8.count)
        }
    }

    @Test func emptyDataStaysAnEmptyBlob() throws {
        let stored = try roundTrip(Data())
        #expect(stored.value == Data())
        #expect(stored.type == "blob")
        #expect(try db.scalar(Int.self, "SELECT length(v) FROM t") == 0)
        #expect(try db.scalar(Int.self, "SELECT count(*) FROM t WHERE v IS NULL") == 0)
    }

    @Test func dataWithNULBytes() throws {
        let value = Data([0, 1, 0, 0xFF, 0])
        let stored = try roundTrip(value)
        #expect(stored.value == value)
        #expect(stored.type == "blob")
        #expect(try db.scalar(String.self, "SELECT hex(v) FROM t") == "000100FF00")
    }

    @Test func byteArrays() throws {
        let empty = try roundTrip([UInt8]())
        #expect(empty.value == [])
        #expect(empty.type == "blob")
        #expect(try db.scalar(Int.self, "SELECT length(v) FROM t") == 0)

        let bytes: [UInt8] = [0, 0x7F, 0, 0x80, 0xFF]
        let stored = try roundTrip(bytes)
        #expect(stored.value == bytes)
        #expect(stored.type == "blob")
        #expect(try db.scalar(String.self, "SELECT hex(v) FROM t") == "007F0080FF")
    }

    // MARK: Date, UUID

    @Test func dateWithinOneMicrosecond() throws {
        let dates = [
            Date(), Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_700_000_000.123456),
            Date(timeIntervalSince1970: -86_400.5), Date(timeIntervalSinceReferenceDate: 1_000_000_000.000_001),
        ]
        for date in dates {
            let stored = try roundTrip(date)
            #expect(abs(stored.value.timeIntervalSince(date)) < 1e-6, "\(date) came back as \(stored.value)")
            #expect(stored.type == "real")
        }
    }

    @Test func dateIsUnixSecondsForSQLDateFunctions() throws {
        _ = try roundTrip(Date(timeIntervalSince1970: 86_400 + 3_661))
        #expect(try db.scalar(String.self, "SELECT datetime(v, 'unixepoch') FROM t") == "1970-01-02 01:01:01")
        #expect(try decodeStored("unixepoch('2000-01-01')", as: Date.self) == Date(timeIntervalSince1970: 946_684_800))
    }

    @Test func uuidIsA16ByteBlob() throws {
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let stored = try roundTrip(uuid)
        #expect(stored.value == uuid)
        #expect(stored.type == "blob")
        #expect(try db.scalar(Int.self, "SELECT length(v) FROM t") == 16)
        #expect(try db.scalar(String.self, "SELECT hex(v) FROM t") == "E621E1F8C36C495A93FC0C247A3E6E5F")

        let random = UUID()
        #expect(try roundTrip(random).value == random)
    }

    @Test func uuidReadFrom36CharacterText() throws {
        let uuid = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(try decodeStored("'E621E1F8-C36C-495A-93FC-0C247A3E6E5F'", as: UUID.self) == uuid)
        #expect(try decodeStored("'e621e1f8-c36c-495a-93fc-0c247a3e6e5f'", as: UUID.self) == uuid)
        try expectMismatch("'E621E1F8C36C495A93FC0C247A3E6E5F'", as: UUID.self)
        try expectMismatch("x'0102'", as: UUID.self)
    }

    // MARK: Optional, enums

    @Test func optionalNilIsNull() throws {
        let stored = try roundTrip(Int?.none)
        #expect(stored.value == nil)
        #expect(stored.type == "null")

        let present = try roundTrip(Int?.some(7))
        #expect(present.value == 7)
        #expect(present.type == "integer")

        let text = try roundTrip(String?.none)
        #expect(text.value == nil)
        #expect(text.type == "null")
    }

    @Test func rawRepresentableEnums() throws {
        for priority in [Priority.low, .normal, .high] {
            let stored = try roundTrip(priority)
            #expect(stored.value == priority)
            #expect(stored.type == "integer")
            #expect(try db.scalar(Int.self, "SELECT v FROM t") == priority.rawValue)
        }
        let flavor = try roundTrip(Flavor.chocolate)
        #expect(flavor.value == .chocolate)
        #expect(flavor.type == "text")
        #expect(try db.scalar(String.self, "SELECT v FROM t") == "chocolate")
        #expect(try roundTrip(Priority?.none).type == "null")
    }

    @Test func databaseValueRoundTrip() throws {
        let values: [DatabaseValue] = [.null, .integer(.min), .real(0.5), .text("é"), .blob(Data([0, 1]))]
        for value in values {
            #expect(try roundTrip(value).value == value)
        }
    }

    // MARK: Lossy conversions throw

    @Test func realWithFractionToIntegerThrows() throws {
        try expectMismatch("1.5", as: Int.self)
        try expectMismatch("1.5", as: Int64.self)
        try expectMismatch("1e19", as: Int64.self)
    }

    @Test func integerOutOfRangeThrows() throws {
        try expectMismatch("300", as: Int8.self)
        try expectMismatch("-129", as: Int8.self)
        try expectMismatch("256", as: UInt8.self)
        try expectMismatch("-1", as: UInt8.self)
        try expectMismatch("65536", as: UInt16.self)
        try expectMismatch("-1", as: UInt32.self)
        try expectMismatch("4294967296", as: UInt32.self)
        try expectMismatch("2147483648", as: Int32.self)
        try expectMismatch("32768", as: Int16.self)
    }

    @Test func integerBeyond2Pow53ToDoubleThrows() throws {
        try expectMismatch("9007199254740993", as: Double.self)
        try expectMismatch("9223372036854775807", as: Double.self)
        try expectMismatch("0.1", as: Float.self)
        try expectMismatch("16777217", as: Float.self)
    }

    @Test func textToNumberThrows() throws {
        try expectMismatch("'12'", as: Int.self)
        try expectMismatch("'1.5'", as: Double.self)
        try expectMismatch("'true'", as: Bool.self)
        try expectMismatch("x'00'", as: String.self)
        try expectMismatch("'abc'", as: Data.self)
        try expectMismatch("'abc'", as: [UInt8].self)
        try expectMismatch("'2000-01-01'", as: Date.self)
    }

    @Test func integerOtherThanZeroOrOneToBoolThrows() throws {
        try expectMismatch("2", as: Bool.self)
        try expectMismatch("-1", as: Bool.self)
        try expectMismatch("1.0", as: Bool.self)
        #expect(try decodeStored("1", as: Bool.self) == true)
        #expect(try decodeStored("0", as: Bool.self) == false)
    }

    @Test func nullToNonOptionalThrows() throws {
        try expectMismatch("NULL", as: Int.self)
        try expectMismatch("NULL", as: String.self)
        try expectMismatch("NULL", as: Data.self)
        try expectMismatch("NULL", as: Date.self)
        try expectMismatch("NULL", as: UUID.self)
        try expectMismatch("NULL", as: Bool.self)
        try expectMismatch("NULL", as: Priority.self)
        #expect(try decodeStored("NULL", as: Int?.self) == nil)
    }

    @Test func invalidRawValueToEnumThrows() throws {
        try expectMismatch("7", as: Priority.self)
        try expectMismatch("'strawberry'", as: Flavor.self)
        try expectMismatch("'2'", as: Priority.self)
        #expect(try decodeStored("2", as: Priority.self) == .normal)
    }

    /// The message must name the type the caller asked for, not a type the conversion went through.
    @Test func conversionErrorNamesTheRequestedType() throws {
        func expectNamed<Value: DatabaseValueConvertible>(
            _ expression: String, _ type: Value.Type, sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let error = try #require(throws: DatabaseError.self, sourceLocation: sourceLocation) {
                _ = try decodeStored(expression, as: Value.self)
            }
            #expect(error.message.contains("to \(Value.self) "), "\(error.message)", sourceLocation: sourceLocation)
        }
        try expectNamed("'abc'", Int8.self)
        try expectNamed("NULL", UInt16.self)
        try expectNamed("1.5", Int32.self)
        try expectNamed("'abc'", Float.self)
        try expectNamed("NULL", Priority.self)
        try expectNamed("'2'", Priority.self)
        try expectNamed("7", Priority.self)
        try expectNamed("x'00'", Flavor.self)
        try expectNamed("'abc'", Int.self)
    }

    /// A type's own error from decoding passes through a row read unchanged (only a
    /// ``DatabaseError`` gets the column's name added).
    @Test func ownDecodingErrorIsRethrownAsItIs() throws {
        #expect(throws: Refusing.Refused()) { _ = try decodeStored("1", as: Refusing.self) }
        let error = try #require(throws: DatabaseError.self) { _ = try decodeStored("'x'", as: Int.self) }
        #expect(error.message.contains("column 'v'"), "\(error.message)")
    }

    @Test func bindingNaNThrows() throws {
        let error = try #require(throws: DatabaseError.self) {
            try db.execute("INSERT INTO t (v) VALUES (\(Double.nan))")
        }
        #expect(error.resultCode == .mismatch)
        #expect(error.message.contains("NaN"))
        #expect(try db.count("t") == 0)

        let statement = try db.makeStatement("INSERT INTO t (v) VALUES (?)")
        #expect(throws: DatabaseError.self) { try statement.execute(Float.nan) }
        #expect(try db.count("t") == 0)
    }

    @Test func infiniteRealIsNotADate() throws {
        try expectMismatch("9e999", as: Date.self)
    }
}

/// A value type whose conversion always fails with its own error.
private struct Refusing: DatabaseValueConvertible {
    struct Refused: Error, Equatable {}
    var databaseValue: DatabaseValue { .null }
    static func fromDatabaseValue(_ value: DatabaseValue) throws -> Refusing { throw Refused() }
}
