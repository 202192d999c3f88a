import Foundation

/// A value of one of SQLite's five storage classes.
///
/// INTEGER is always 64-bit; TEXT is UTF-8; BLOB is raw bytes. Every Swift
/// type the library stores converts to and from this enum (see
/// ``DatabaseValueConvertible``).
///
/// ```swift
/// let values: [DatabaseValue] = [.null, .integer(.max), .real(0.5), .text("é"), .blob(Data([0, 1]))]
/// ```
///
/// See <https://www.sqlite.org/datatype3.html>.
public enum DatabaseValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// The storage class of the value.
    public var storageClass: StorageClass {
        switch self {
        case .null: .null
        case .integer: .integer
        case .real: .real
        case .text: .text
        case .blob: .blob
        }
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A rendering for error messages that tells the kind and size of a value but
    /// not its content (values are user data): `INTEGER`, `TEXT (12 bytes)`.
    package var diagnosticDescription: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text(let value): "TEXT (\(value.utf8.count) bytes)"
        case .blob(let value): "BLOB (\(value.count) bytes)"
        }
    }

    /// An SQL-literal-like rendering, used only in opted-in error descriptions.
    package var sqlLiteralDescription: String {
        switch self {
        case .null: "NULL"
        case .integer(let value): String(value)
        case .real(let value): String(value)
        case .text(let value): "'\(value.replacingOccurrences(of: "'", with: "''"))'"
        case .blob(let value): "X'\(value.map { String(format: "%02X", $0) }.joined())'"
        }
    }
}

/// SQLite's storage classes. See <https://www.sqlite.org/datatype3.html>.
public enum StorageClass: String, Sendable, CaseIterable {
    case null = "NULL"
    case integer = "INTEGER"
    case real = "REAL"
    case text = "TEXT"
    case blob = "BLOB"
}
