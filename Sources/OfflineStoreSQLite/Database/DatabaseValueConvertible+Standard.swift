import Foundation

extension Int64: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self) }

    @inlinable
    public static func decode(from column: StatementColumn) throws -> Int64 {
        if column.storageClass == .integer { return column.int64 }
        return try convert(column)
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Int64 {
        switch value {
        case .integer(let integer):
            return integer
        case .real(let real):
            guard let integer = Int64(exactly: real) else {
                throw conversionError(value, reason: "not a whole number in range")
            }
            return integer
        default:
            throw conversionError(value)
        }
    }
}

/// Fixed-width integers narrower than 64 bits (and `Int`) go through `Int64`
/// and refuse values out of their range.
public protocol DatabaseInteger: FixedWidthInteger, DatabaseValueConvertible {}

extension DatabaseInteger {
    public var databaseValue: DatabaseValue { .integer(Int64(self)) }

    @inlinable
    public static func decode(from column: StatementColumn) throws -> Self {
        if column.storageClass == .integer, let narrow = Self(exactly: column.int64) { return narrow }
        return try convert(column)
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Self {
        // Convert through Int64, but report failures in terms of the type asked for.
        guard let wide = try? Int64.fromDatabaseValue(value) else { throw conversionError(value) }
        guard let narrow = Self(exactly: wide) else {
            throw conversionError(value, reason: "out of range \(Self.min)...\(Self.max)")
        }
        return narrow
    }
}

extension Int: DatabaseInteger {}
extension Int32: DatabaseInteger {}
extension Int16: DatabaseInteger {}
extension Int8: DatabaseInteger {}
extension UInt32: DatabaseInteger {}
extension UInt16: DatabaseInteger {}
extension UInt8: DatabaseInteger {}

extension Double: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .real(self) }

    @inlinable
    public static func decode(from column: StatementColumn) throws -> Double {
        if column.storageClass == .real { return column.double }
        return try convert(column)
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Double {
        switch value {
        case .real(let real):
            return real
        case .integer(let integer):
            guard let real = Double(exactly: integer) else {
                throw conversionError(value, reason: "beyond 2^53 a Double cannot hold every integer")
            }
            return real
        default:
            throw conversionError(value)
        }
    }
}

extension Float: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .real(Double(self)) }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Float {
        guard let real = try? Double.fromDatabaseValue(value) else { throw conversionError(value) }
        guard let narrow = Float(exactly: real) else {
            throw conversionError(value, reason: "not exactly representable as a Float")
        }
        return narrow
    }
}

extension Bool: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }

    @inlinable
    public static func decode(from column: StatementColumn) throws -> Bool {
        if column.storageClass == .integer {
            switch column.int64 {
            case 0: return false
            case 1: return true
            default: break
            }
        }
        return try convert(column)
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Bool {
        switch value {
        case .integer(0): return false
        case .integer(1): return true
        default: throw conversionError(value, reason: "a Bool is stored as INTEGER 0 or 1")
        }
    }
}

extension String: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .text(self) }

    @inlinable
    public static func decode(from column: StatementColumn) throws -> String {
        if let text = column.text { return text }
        return try convert(column)
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> String {
        guard case .text(let text) = value else { throw conversionError(value) }
        return text
    }
}

extension Data: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .blob(self) }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Data {
        guard case .blob(let bytes) = value else { throw conversionError(value) }
        return bytes
    }
}

extension [UInt8]: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .blob(Data(self)) }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> [UInt8] {
        guard case .blob(let bytes) = value else { throw conversionError(value) }
        return [UInt8](bytes)
    }
}

extension Date: DatabaseValueConvertible {
    /// Seconds since 1970-01-01 00:00:00 UTC, as a REAL.
    public var databaseValue: DatabaseValue { .real(timeIntervalSince1970) }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> Date {
        switch value {
        case .real(let seconds):
            guard seconds.isFinite else { throw conversionError(value, reason: "not a finite time") }
            return Date(timeIntervalSince1970: seconds)
        case .integer(let seconds):
            return Date(timeIntervalSince1970: Double(seconds))
        default:
            throw conversionError(
                value, reason: "dates are stored as REAL Unix seconds; convert text in SQL with unixepoch()")
        }
    }
}

extension UUID: DatabaseValueConvertible {
    /// The 16 bytes of the UUID, in RFC 4122 order.
    public var databaseValue: DatabaseValue {
        withUnsafeBytes(of: uuid) { .blob(Data($0)) }
    }

    public static func fromDatabaseValue(_ value: DatabaseValue) throws -> UUID {
        switch value {
        case .blob(let bytes) where bytes.count == 16:
            var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &uuid) { $0.copyBytes(from: bytes) }
            return UUID(uuid: uuid)
        case .text(let text):
            guard text.utf8.count == 36, let uuid = UUID(uuidString: text) else {
                throw conversionError(value, reason: "not a UUID string")
            }
            return uuid
        default:
            throw conversionError(value, reason: "a UUID is a 16-byte BLOB or a 36-character TEXT")
        }
    }
}
