import CLibPQ
import Foundation

/// The result of one statement, owning its `PGresult` (cleared in `deinit`). Rows are read in
/// the binary format the connection asks for; each accessor checks the column's type, so a
/// changed schema shows up as an error, not as misread bytes.
///
/// ```swift
/// let result = try connection.execute(Statements.lastSerial, [.int8(datasetID)])
/// let serial = try result.int64(row: 0, column: 0)
/// ```
///
/// See <https://www.postgresql.org/docs/15/libpq-exec.html#LIBPQ-EXEC-SELECT-INFO>.
final class PostgresResult {
    private let handle: OpaquePointer
    private let statementName: String

    /// Takes ownership of `handle`.
    init(owning handle: OpaquePointer, statementName: String) {
        self.handle = handle
        self.statementName = statementName
    }

    deinit {
        PQclear(handle)
    }

    var rowCount: Int { Int(PQntuples(handle)) }
    var columnCount: Int { Int(PQnfields(handle)) }

    /// The number of rows an INSERT, UPDATE or DELETE touched.
    var affectedRows: Int { Int(String(cString: PQcmdTuples(handle))) ?? 0 }

    func isNull(row: Int, column: Int) -> Bool { PQgetisnull(handle, Int32(row), Int32(column)) == 1 }

    private func bytes(row: Int, column: Int, _ expected: [PostgresType]) throws(PostgresError)
        -> UnsafeRawBufferPointer
    {
        guard row < rowCount, column < columnCount else {
            throw PostgresError(
                .result, "no value at row \(row), column \(column) (\(rowCount)×\(columnCount))",
                statementName: statementName)
        }
        let type = PQftype(handle, Int32(column))
        guard expected.contains(where: { $0.rawValue == type }) else {
            throw PostgresError(
                .result, "column \(column) has type OID \(type), expected \(expected)", statementName: statementName)
        }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeRawBufferPointer(start: PQgetvalue(handle, Int32(row), Int32(column)), count: length)
    }

    private func integer<Integer: FixedWidthInteger>(_: Integer.Type, _ raw: UnsafeRawBufferPointer)
        throws(PostgresError) -> Integer
    {
        guard raw.count == MemoryLayout<Integer>.size else {
            throw PostgresError(.result, "an integer of \(raw.count) bytes", statementName: statementName)
        }
        var value = Integer.zero
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: raw) }
        return Integer(bigEndian: value)
    }

    func int64(row: Int, column: Int) throws(PostgresError) -> Int64 {
        let raw = try bytes(row: row, column: column, [.int8, .int4, .int2])
        switch raw.count {
        case 2: return Int64(try integer(Int16.self, raw))
        case 4: return Int64(try integer(Int32.self, raw))
        default: return try integer(Int64.self, raw)
        }
    }

    func optionalInt64(row: Int, column: Int) throws(PostgresError) -> Int64? {
        isNull(row: row, column: column) ? nil : try int64(row: row, column: column)
    }

    func double(row: Int, column: Int) throws(PostgresError) -> Double {
        Double(bitPattern: try integer(UInt64.self, try bytes(row: row, column: column, [.float8])))
    }

    func optionalDouble(row: Int, column: Int) throws(PostgresError) -> Double? {
        isNull(row: row, column: column) ? nil : try double(row: row, column: column)
    }

    func bool(row: Int, column: Int) throws(PostgresError) -> Bool {
        let raw = try bytes(row: row, column: column, [.bool])
        return raw.first.map { $0 != 0 } ?? false
    }

    func string(row: Int, column: Int) throws(PostgresError) -> String {
        String(decoding: try bytes(row: row, column: column, [.text]), as: UTF8.self)
    }

    /// A text value's bytes in place, valid while this result lives: for bytes passed on as they
    /// are, without a string's UTF-8 check and copy.
    func textBytes(row: Int, column: Int) throws(PostgresError) -> UnsafeRawBufferPointer {
        try bytes(row: row, column: column, [.text])
    }

    func optionalString(row: Int, column: Int) throws(PostgresError) -> String? {
        isNull(row: row, column: column) ? nil : try string(row: row, column: column)
    }

    /// A `bytea` value where the result keeps it: valid while the result lives.
    func byteaBytes(row: Int, column: Int) throws(PostgresError) -> UnsafeRawBufferPointer {
        try bytes(row: row, column: column, [.bytea])
    }

    func data(row: Int, column: Int) throws(PostgresError) -> Data {
        Data(try byteaBytes(row: row, column: column))
    }

    func optionalData(row: Int, column: Int) throws(PostgresError) -> Data? {
        isNull(row: row, column: column) ? nil : try data(row: row, column: column)
    }
}
