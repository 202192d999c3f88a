import Foundation

/// Decodes a `Decodable` value from a row: each property from the column of
/// the same name, converted exactly as ``DatabaseValueConvertible`` says.
///
/// Types that convert to one database value (`Date`, `UUID`, `Data`, your
/// `RawRepresentable` enums declared ``DatabaseValueConvertible``) use that
/// conversion; any other nested `Decodable` (arrays, structs) is read from
/// JSON stored in a TEXT or BLOB column, the form ``RecordEncoder`` writes.
///
/// ```swift
/// struct Reminder: Decodable, FetchableRecord { var id: UUID; var title: String; var tags: [String] }
/// let reminder = try Reminder(from: RowDecoder(row: row))  // what Reminder.fetchAll does per row
/// ```
public struct RowDecoder: Decoder {
    let row: Row
    public var codingPath: [any CodingKey] { [] }
    public var userInfo: [CodingUserInfoKey: Any] { [:] }

    public init(row: Row) {
        self.row = row
    }

    public func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RowKeyedDecodingContainer<Key>(row: row))
    }

    public func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        RowUnkeyedDecodingContainer(row: row)
    }

    /// A single value is the row's only column.
    public func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard row.count == 1 else {
            throw DecodingError.typeMismatch(
                Any.self,
                .init(
                    codingPath: [],
                    debugDescription: "a single value needs a row of one column; this row has \(row.count)"))
        }
        return RowSingleValueDecodingContainer(row: row, index: 0)
    }
}

/// Reads a value of any `Decodable` type from one column.
extension Row {
    func decodeDecodable<Value: Decodable>(_ type: Value.Type, at index: Int) throws -> Value {
        if let convertible = Value.self as? any DatabaseValueConvertible.Type {
            let decoded = try decodeExistential(convertible, at: index)
            guard let value = decoded as? Value else {
                throw DatabaseError.misuse("type confusion decoding \(Value.self)")
            }
            return value
        }
        let json: Data
        switch try databaseValue(at: index) {
        case .text(let text): json = Data(text.utf8)
        case .blob(let bytes): json = bytes
        case let other:
            throw contextualized(
                DatabaseError.conversion(
                    "cannot decode \(Value.self) from \(other.diagnosticDescription): nested values are stored as JSON text"
                ),
                column: index)
        }
        do {
            return try JSONDecoder().decode(Value.self, from: json)
        } catch {
            throw contextualized(
                DatabaseError.conversion("the JSON stored for \(Value.self) does not decode: \(error)"), column: index)
        }
    }

    private func decodeExistential<Value: DatabaseValueConvertible>(_ type: Value.Type, at index: Int) throws
        -> Value
    {
        try decode(Value.self, at: index)
    }
}

struct RowKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let row: Row
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { row.columnNames.compactMap { Key(stringValue: $0) } }

    @inline(__always)
    private func index(_ key: Key) throws -> Int {
        if let index = row.index(ofColumn: key.stringValue) { return index }
        throw DecodingError.keyNotFound(
            key,
            .init(
                codingPath: [],
                debugDescription:
                    "no column named '\(key.stringValue)' in the row (columns: \(row.columnNames.joined(separator: ", "))); select it, alias it with AS, or make the property optional"
            ))
    }

    func contains(_ key: Key) -> Bool { row.hasColumn(key.stringValue) }

    func decodeNil(forKey key: Key) throws -> Bool {
        try row.databaseValue(at: index(key)).isNull
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try row.decode(at: index(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try row.decode(at: index(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try row.decode(at: index(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try row.decode(at: index(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try row.decode(at: index(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try row.decode(at: index(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try row.decode(at: index(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try row.decode(at: index(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try row.decode(at: index(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try row.decode(at: index(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try row.decode(at: index(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try row.decode(at: index(key)) }

    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        let value = try row.decode(Int64.self, at: index(key))
        guard let result = UInt(exactly: value) else {
            throw DatabaseError.conversion("column '\(key.stringValue)': \(value) is out of range for UInt")
        }
        return result
    }

    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        let value = try row.decode(Int64.self, at: index(key))
        guard let result = UInt64(exactly: value) else {
            throw DatabaseError.conversion("column '\(key.stringValue)': \(value) is out of range for UInt64")
        }
        return result
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try row.decodeDecodable(T.self, at: index(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw DecodingError.typeMismatch(
            type,
            .init(codingPath: [key], debugDescription: "nested containers are stored as JSON: use a Decodable property")
        )
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(
            [Any].self,
            .init(codingPath: [key], debugDescription: "nested containers are stored as JSON: use a Decodable property")
        )
    }

    func superDecoder() throws -> any Decoder { RowDecoder(row: row) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RowDecoder(row: row) }
}

/// Columns in order, for types that decode positionally.
struct RowUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let row: Row
    var codingPath: [any CodingKey] { [] }
    var count: Int? { row.count }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= row.count }

    init(row: Row) {
        self.row = row
    }

    mutating func decodeNil() throws -> Bool {
        let isNull = try row.databaseValue(at: currentIndex).isNull
        if isNull { currentIndex += 1 }
        return isNull
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try row.decodeDecodable(T.self, at: currentIndex)
        currentIndex += 1
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        throw DecodingError.typeMismatch(type, .init(codingPath: [], debugDescription: "rows do not nest"))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch([Any].self, .init(codingPath: [], debugDescription: "rows do not nest"))
    }

    mutating func superDecoder() throws -> any Decoder { RowDecoder(row: row) }
}

struct RowSingleValueDecodingContainer: SingleValueDecodingContainer {
    let row: Row
    let index: Int
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { (try? row.databaseValue(at: index).isNull) ?? false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try row.decodeDecodable(T.self, at: index)
    }
}
