import Foundation
import SyncProtocol

/// A cell's value as the PostgreSQL backend stores it: its SQLite storage class in `value_type`
/// and the value in the column for that class. Text is kept as its UTF-8 bytes, because
/// PostgreSQL's `text` cannot hold U+0000, which SQLite's (and the wire's) can.
struct PostgresCellValue {
    var type: Int16
    var integer: Int64?
    var real: Double?
    var bytes: Data?

    init(_ value: WireValue) {
        switch value {
        case .null: self.init(type: 0)
        case .integer(let integer): self.init(type: 1, integer: integer)
        case .real(let real): self.init(type: 2, real: real)
        case .text(let text): self.init(type: 3, bytes: Data(text.utf8))
        case .blob(let blob): self.init(type: 4, bytes: blob)
        }
    }

    private init(type: Int16, integer: Int64? = nil, real: Double? = nil, bytes: Data? = nil) {
        self.type = type
        self.integer = integer
        self.real = real
        self.bytes = bytes
    }

    /// The value stored at `column` (`value_type`) and the three columns after it.
    static func wireValue(_ result: PostgresResult, row: Int, column: Int) throws -> WireValue {
        switch try result.int64(row: row, column: column) {
        case 0: return .null
        case 1: return .integer(try result.int64(row: row, column: column + 1))
        case 2: return .real(try result.double(row: row, column: column + 2))
        case 3: return .text(String(decoding: try result.data(row: row, column: column + 3), as: UTF8.self))
        case 4: return .blob(try result.data(row: row, column: column + 3))
        case let other: throw PostgresError(.result, "a cell of unknown value type \(other)")
        }
    }
}
