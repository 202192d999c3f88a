import Foundation

/// Encodes an `Encodable` value into column/value pairs: each property
/// becomes the column of the same name.
///
/// Types that convert to one database value use that conversion (so a
/// `Date` is REAL Unix seconds, a `UUID` a 16-byte BLOB); `nil` optionals
/// become NULL (not omitted, so every record of a type writes the same
/// columns); any other nested `Encodable` is stored as JSON text with sorted keys.
///
/// ```swift
/// let encoder = RecordEncoder()
/// try reminder.encode(to: encoder)
/// print(encoder.container.columns)  // ["id", "title", "done"]
/// ```
public final class RecordEncoder: Encoder {
    // Written once per property; the encoder is not Sendable, so accesses never overlap.
    @exclusivity(unchecked) public private(set) var container = PersistenceContainer()
    public let codingPath: [any CodingKey] = []
    public var userInfo: [CodingUserInfoKey: Any] { [:] }

    public init() {}

    /// Starts from an emptied container whose storage can be reused.
    init(reusing container: PersistenceContainer) {
        self.container = container
        self.container.removeAll()
    }

    public func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(RecordKeyedEncodingContainer<Key>(encoder: self))
    }

    public func unkeyedContainer() -> any UnkeyedEncodingContainer {
        FailingUnkeyedEncodingContainer()
    }

    public func singleValueContainer() -> any SingleValueEncodingContainer {
        FailingSingleValueEncodingContainer()
    }

    @inline(__always)
    func set(_ value: DatabaseValue, forKey key: some CodingKey) {
        container.set(key.stringValue, databaseValue: value)
    }

    /// The database value of any `Encodable`: its own conversion, or JSON text.
    static func databaseValue<Value: Encodable>(of value: Value) throws -> DatabaseValue {
        if let convertible = value as? any DatabaseValueConvertible {
            return convertible.databaseValue
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        return .text(String(decoding: data, as: UTF8.self))
    }
}

struct RecordKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: RecordEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws { encoder.set(.null, forKey: key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: String, forKey key: Key) throws { encoder.set(.text(value), forKey: key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { encoder.set(.real(value), forKey: key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { encoder.set(.integer(Int64(value)), forKey: key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { encoder.set(.integer(value), forKey: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { encoder.set(value.databaseValue, forKey: key) }

    mutating func encode(_ value: UInt, forKey key: Key) throws {
        encoder.set(.integer(try Self.exactInt64(value, key)), forKey: key)
    }

    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        encoder.set(.integer(try Self.exactInt64(value, key)), forKey: key)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        encoder.set(try RecordEncoder.databaseValue(of: value), forKey: key)
    }

    // Optionals encode NULL rather than being left out, so the column list never varies.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try put(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try put(value, key) }

    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    private func put<Value: DatabaseValueConvertible>(_ value: Value?, _ key: Key) throws {
        encoder.set(value?.databaseValue ?? .null, forKey: key)
    }

    private static func exactInt64<Value: BinaryInteger>(_ value: Value, _ key: Key) throws -> Int64 {
        guard let result = Int64(exactly: value) else {
            throw EncodingError.invalidValue(
                value,
                .init(
                    codingPath: [key],
                    debugDescription: "\(value) does not fit SQLite's 64-bit signed INTEGER; store it as TEXT"))
        }
        return result
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        KeyedEncodingContainer(FailingKeyedEncodingContainer<NestedKey>())
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        FailingUnkeyedEncodingContainer()
    }

    mutating func superEncoder() -> any Encoder { encoder }
    mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
}

/// Records are flat rows: custom `encode(to:)` code that asks for anything but
/// a keyed container gets these, which throw with an explanation.
private let flatRowsOnly = "a record encodes to one row: use a keyed container, and plain or Encodable properties"

struct FailingKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil(forKey key: Key) throws { throw Self.error() }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { throw Self.error() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(FailingKeyedEncodingContainer<NestedKey>()) }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        FailingUnkeyedEncodingContainer()
    }
    mutating func superEncoder() -> any Encoder { RecordEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { RecordEncoder() }
    static func error() -> EncodingError {
        .invalidValue((), .init(codingPath: [], debugDescription: flatRowsOnly))
    }
}

struct FailingUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    var count: Int { 0 }
    mutating func encodeNil() throws { throw FailingKeyedEncodingContainer<AnyKey>.error() }
    mutating func encode<T: Encodable>(_ value: T) throws { throw FailingKeyedEncodingContainer<AnyKey>.error() }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    { KeyedEncodingContainer(FailingKeyedEncodingContainer<NestedKey>()) }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { RecordEncoder() }
}

struct FailingSingleValueEncodingContainer: SingleValueEncodingContainer {
    var codingPath: [any CodingKey] { [] }
    mutating func encodeNil() throws { throw FailingKeyedEncodingContainer<AnyKey>.error() }
    mutating func encode<T: Encodable>(_ value: T) throws { throw FailingKeyedEncodingContainer<AnyKey>.error() }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
