import Foundation

/// The declared type of a column.
///
/// STRICT tables accept only the five listed here; other tables may carry any declared type
/// (a database made by another tool), kept verbatim in upper case so schemas compare exactly.
/// See <https://www.sqlite.org/stricttables.html> and <https://www.sqlite.org/datatype3.html>.
public struct ColumnType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue.trimmingCharacters(in: .whitespaces).uppercased()
    }

    public static let integer = ColumnType(rawValue: "INTEGER")
    public static let real = ColumnType(rawValue: "REAL")
    public static let text = ColumnType(rawValue: "TEXT")
    public static let blob = ColumnType(rawValue: "BLOB")
    public static let any = ColumnType(rawValue: "ANY")

    /// Whether a STRICT table accepts this type.
    public var isAllowedInStrictTables: Bool {
        ["INTEGER", "INT", "REAL", "TEXT", "BLOB", "ANY"].contains(rawValue)
    }

    public var description: String { rawValue.isEmpty ? "(no type)" : rawValue }
}
