/// Which storage classes a column of a STRICT table takes, the one rule both the client's apply
/// (which SQLite would refuse anyway) and the server's check of pushed changes (``SchemaRules``)
/// use: NULL in any column (NOT NULL is a rule of its own), anything in ANY, an integer in a
/// REAL column (SQLite stores it as a real), otherwise only the declared class; `INT` is a
/// spelling of INTEGER.
///
/// ```swift
/// StrictColumnRule.accepted(byDeclaredType: "REAL").contains(.integer)  // true
/// StrictColumnRule.accepted(byDeclaredType: "TEXT").contains(.blob)  // false
/// ```
///
/// See <https://www.sqlite.org/stricttables.html>.
public enum StrictColumnRule {
    /// The storage classes a STRICT table's column of `declaredType` (any case) takes.
    public static func accepted(byDeclaredType declaredType: String) -> StorageClasses {
        switch declaredType.uppercased() {
        case "ANY": .all
        case "INTEGER", "INT": [.null, .integer]
        case "REAL": [.null, .integer, .real]
        case "TEXT": [.null, .text]
        case "BLOB": [.null, .blob]
        // Not a type a STRICT table declares: SQLite refuses the table, so nothing but NULL fits.
        default: [.null]
        }
    }
}

/// A set of SQLite's five storage classes, as bits.
public struct StorageClasses: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let null = StorageClasses(rawValue: 1)
    public static let integer = StorageClasses(rawValue: 2)
    public static let real = StorageClasses(rawValue: 4)
    public static let text = StorageClasses(rawValue: 8)
    public static let blob = StorageClasses(rawValue: 16)
    public static let all: StorageClasses = [.null, .integer, .real, .text, .blob]
}

extension WireValue {
    /// The value's storage class, as a member of ``StorageClasses``.
    public var storageClassBit: StorageClasses {
        switch self {
        case .null: .null
        case .integer: .integer
        case .real: .real
        case .text: .text
        case .blob: .blob
        }
    }

    /// The storage class's name, for messages: `NULL`, `INTEGER`, `REAL`, `TEXT`, `BLOB`.
    public var storageClassName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}
