import Foundation

/// A Swift type that stores as one SQLite value.
///
/// Conversions are exact: reading a value that cannot become the requested
/// type without loss throws a ``DatabaseError`` with code
/// ``ResultCode/mismatch`` instead of rounding, truncating or wrapping.
///
/// | Swift type | stored as | also read from |
/// |---|---|---|
/// | `Int`, `Int64`, `Int32`, `Int16`, `Int8`, `UInt32`, `UInt16`, `UInt8` | INTEGER | REAL holding a whole number in range |
/// | `Double` | REAL (NaN is refused: SQLite would store it as NULL) | INTEGER exactly representable as a `Double` (|n| ≤ 2^53 or otherwise exact) |
/// | `Float` | REAL | REAL or INTEGER exactly representable as a `Float` |
/// | `Bool` | INTEGER 0 or 1 | only INTEGER 0 and 1 |
/// | `String` | TEXT (UTF-8, may contain NUL) | nothing else |
/// | `Data`, `[UInt8]` | BLOB (empty stays an empty BLOB, not NULL) | nothing else |
/// | `Date` | REAL: seconds since 1970-01-01 UTC, as SQLite's `unixepoch` and `datetime(x, 'unixepoch')` use | INTEGER seconds since 1970 |
/// | `UUID` | BLOB of 16 bytes, in RFC 4122 byte order | TEXT in the 36-character form, any case |
/// | `Optional<Wrapped>` | NULL for `nil`, else as `Wrapped` | NULL becomes `nil` |
/// | `RawRepresentable` (declare the conformance) | as its `RawValue` | raw values the type accepts |
/// | ``DatabaseValue`` | itself | anything |
///
/// A `Date` keeps the precision a `Double` of Unix seconds has (about a
/// quarter of a microsecond for present-day dates), so a round trip may move
/// a date by less than a microsecond; SQL date functions read it directly.
///
/// ```swift
/// enum Priority: Int, DatabaseValueConvertible { case low, high }
/// try db.execute("UPDATE reminders SET priority = \(Priority.high) WHERE id = \(id)")
/// let priority = try db.fetchValue(Priority.self, "SELECT priority FROM reminders WHERE id = \(id)")
/// ```
///
/// See <https://www.sqlite.org/datatype3.html>.
public protocol DatabaseValueConvertible {
    /// The value to store.
    var databaseValue: DatabaseValue { get }

    /// The Swift value for a stored value; throws a ``DatabaseError`` (``ResultCode/mismatch``)
    /// when the conversion would lose information.
    static func fromDatabaseValue(_ value: DatabaseValue) throws -> Self

    /// Reads the value straight from a statement's current row. The default
    /// goes through ``fromDatabaseValue(_:)``; the standard types read in place.
    static func decode(from column: StatementColumn) throws -> Self
}

extension DatabaseValueConvertible {
    @inlinable
    public static func decode(from column: StatementColumn) throws -> Self {
        try fromDatabaseValue(column.databaseValue())
    }
}

extension DatabaseValueConvertible {
    /// `fromDatabaseValue(column.databaseValue())`, out of line: the slow path of the standard
    /// types' `decode(from:)`, whose fast path stays small enough to be inlined where rows are read.
    @usableFromInline @inline(never)
    static func convert(_ column: StatementColumn) throws -> Self {
        try fromDatabaseValue(column.databaseValue())
    }

    /// The error for a stored value this type cannot represent exactly.
    static func conversionError(_ value: DatabaseValue, reason: String? = nil) -> DatabaseError {
        var message = "cannot convert \(value.diagnosticDescription) to \(Self.self) without loss"
        if let reason { message += " (\(reason))" }
        return DatabaseError.conversion(message, value: value)
    }
}

extension DatabaseValue: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { self }
    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> DatabaseValue { value }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue {
        switch self {
        case .none: .null
        case .some(let wrapped): wrapped.databaseValue
        }
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Wrapped? {
        if case .null = value { return nil }
        return try Wrapped.fromDatabaseValue(value)
    }

    @inlinable
    public static func decode(from column: StatementColumn) throws -> Wrapped? {
        if column.storageClass == .null { return nil }
        return try Wrapped.decode(from: column)
    }
}

extension DatabaseValueConvertible where Self: RawRepresentable, RawValue: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { rawValue.databaseValue }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Self {
        guard let raw = try? RawValue.fromDatabaseValue(value) else {
            throw conversionError(value, reason: "not a valid \(RawValue.self) raw value")
        }
        guard let result = Self(rawValue: raw) else {
            throw conversionError(value, reason: "no case of \(Self.self) has this raw value")
        }
        return result
    }
}
