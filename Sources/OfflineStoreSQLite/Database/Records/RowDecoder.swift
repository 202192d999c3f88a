import Foundation

/// Decodes a `Decodable` value from a row: each property from the column of
/// the same name, converted exactly as ``DatabaseValueConvertible`` says.
///
/// Types that convert to one database value (`Date`, `UUID`, `Data`, your
/// `RawRepresentable` enums declared ``DatabaseValueConvertible``) use that
/// conversion; any other nested `Decodable` (arrays, structs) is read from
/// JSON stored in a TEXT or BLOB column, the form ``RecordEncoder`` writes.
///
/// A keyed container reads the row being decoded, as the row itself does: use
/// it inside `init(from:)`, and not after the cursor has moved on. The rows of a
/// statement share their containers, so decoding a record builds none.
///
/// ```swift
/// struct Reminder: Decodable, FetchableRecord { var id: UUID; var title: String; var tags: [String] }
/// let reminder = try Reminder(from: RowDecoder(row: row))  // what Reminder.fetchAll does per row
/// ```
public struct RowDecoder: Decoder {
    @usableFromInline let row: Row
    public var codingPath: [any CodingKey] { [] }
    public var userInfo: [CodingUserInfoKey: Any] { [:] }

    @inlinable
    public init(row: Row) {
        self.row = row
    }

    // Inlinable, so that the record's module specialises it for the record's coding keys:
    // finding the statement's cached container then needs no generic-metadata lookup.
    @inlinable
    public func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if case .statement(let statement, let rowGeneration) = row.source, rowGeneration.current == row.generation {
            return statement._withUnsafeGuaranteedRef {
                $0.keyedContainers.container(keyedBy: Key.self, statement: $0, generation: row.generation)
            }
        }
        return makeKeyedContainer(row)
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

/// A container that looks each key up by name: for copied rows, stale rows, and key types
/// beyond what a statement caches.
@usableFromInline
func makeKeyedContainer<Key: CodingKey>(_ row: Row) -> KeyedDecodingContainer<Key> {
    KeyedDecodingContainer(RowKeyedDecodingContainer<Key>(row: row))
}

/// What a keyed container of ``RowDecoder`` needs to know: where a key's value is.
/// Everything else, the same for every such container, comes with the protocol.
protocol RowKeyedContainer: KeyedDecodingContainerProtocol {
    /// The row and the index of the key's column, or nil when the row has no such column.
    func locateIfPresent(_ key: Key) throws -> (row: Row, index: Int)?
    /// The row being decoded.
    var row: Row { get throws }
    var columnNames: [String] { get }
}

// The per-property methods are `@inline(__always)`: otherwise each conforming container's
// witness calls this generic body, which finds `locateIfPresent` through a witness table
// instantiated at run time (`swift_getWitnessTable` on every property, a large share of a
// Codable fetch).
extension RowKeyedContainer {
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { columnNames.compactMap { Key(stringValue: $0) } }

    @inline(__always)
    func locate(_ key: Key) throws -> (row: Row, index: Int) {
        if let location = try locateIfPresent(key) { return location }
        throw DecodingError.keyNotFound(
            key,
            .init(
                codingPath: [],
                debugDescription:
                    "no column named '\(key.stringValue)' in the row (columns: \(columnNames.joined(separator: ", "))); select it, alias it with AS, or make the property optional"
            ))
    }

    @inline(__always)
    func decodeValue<Value: DatabaseValueConvertible>(_ key: Key) throws -> Value {
        let (row, index) = try locate(key)
        return try row.decode(Value.self, at: index)
    }

    @inline(__always) func contains(_ key: Key) -> Bool { (try? locateIfPresent(key)) != nil }

    @inline(__always) func decodeNil(forKey key: Key) throws -> Bool {
        let (row, index) = try locate(key)
        return try row.databaseValue(at: index).isNull
    }

    @inline(__always) func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decodeValue(key) }
    @inline(__always) func decode(_ type: String.Type, forKey key: Key) throws -> String { try decodeValue(key) }
    @inline(__always) func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decodeValue(key) }
    @inline(__always) func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decodeValue(key) }
    @inline(__always) func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeValue(key) }
    @inline(__always) func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodeValue(key) }
    @inline(__always) func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodeValue(key) }
    @inline(__always) func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodeValue(key) }
    @inline(__always) func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeValue(key) }
    @inline(__always) func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodeValue(key) }
    @inline(__always) func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodeValue(key) }
    @inline(__always) func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodeValue(key) }

    @inline(__always) func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        let value: Int64 = try decodeValue(key)
        guard let result = UInt(exactly: value) else {
            throw DatabaseError.conversion("column '\(key.stringValue)': \(value) is out of range for UInt")
        }
        return result
    }

    @inline(__always) func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        let value: Int64 = try decodeValue(key)
        guard let result = UInt64(exactly: value) else {
            throw DatabaseError.conversion("column '\(key.stringValue)': \(value) is out of range for UInt64")
        }
        return result
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let (row, index) = try locate(key)
        return try row.decodeDecodable(T.self, at: index)
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

    func superDecoder() throws -> any Decoder { RowDecoder(row: try row) }
    func superDecoder(forKey key: Key) throws -> any Decoder { RowDecoder(row: try row) }
}

/// Looks every key up by name in the row it holds.
struct RowKeyedDecodingContainer<Key: CodingKey>: RowKeyedContainer {
    let row: Row
    var columnNames: [String] { row.columnNames }

    func locateIfPresent(_ key: Key) -> (row: Row, index: Int)? {
        row.index(ofColumn: key.stringValue).map { (row, $0) }
    }
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
