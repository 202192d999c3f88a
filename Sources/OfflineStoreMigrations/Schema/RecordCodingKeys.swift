import Foundation

/// The top-level coding keys a `Decodable` type reads, found by decoding it once from placeholder
/// values (zero, empty, the first case of a `CaseIterable` enum, nil for every optional): what
/// ``ModelRecord`` checks against its table's columns.
///
/// ```swift
/// let keys = try RecordCodingKeys.of(Player.self)  // ["id", "name"]
/// ```
enum RecordCodingKeys {
    static func of<Record: Decodable>(_ type: Record.Type) throws -> [String] {
        let decoder = PlaceholderDecoder(keys: KeyList(), depth: 0)
        _ = try Record(from: decoder)
        return decoder.keys.names
    }

    /// The keys read so far, in the order first read.
    final class KeyList {
        var names: [String] = []

        func add(_ name: String) {
            if !names.contains(name) { names.append(name) }
        }
    }

    /// A property whose type no placeholder decodes.
    struct Undecodable: Error, CustomStringConvertible {
        var key: String
        var type: String
        var reason: String

        var description: String { "property \(key) of type \(type) cannot be decoded from a placeholder (\(reason))" }
    }

    /// A placeholder of `type`, for the types records hold that decode from something else than
    /// their own containers.
    static func placeholder<Value: Decodable>(_ type: Value.Type, decoder: PlaceholderDecoder) throws -> Value {
        if let iterable = type as? any CaseIterable.Type, let first = (iterable.allCases as any Collection).first {
            if let value = first as? Value { return value }
        }
        switch type {
        case is Date.Type: return Date(timeIntervalSince1970: 0) as! Value
        case is Data.Type: return Data() as! Value
        case is URL.Type: return URL(fileURLWithPath: "/") as! Value
        case is UUID.Type: return UUID() as! Value
        case is Decimal.Type: return Decimal() as! Value
        default: return try Value(from: decoder)
        }
    }

    struct PlaceholderDecoder: Decoder {
        let keys: KeyList
        let depth: Int
        var codingPath: [any CodingKey] = []
        var userInfo: [CodingUserInfoKey: Any] = [:]

        init(keys: KeyList, depth: Int) {
            self.keys = keys
            self.depth = depth
        }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(decoder: self))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer { Unkeyed(decoder: self) }

        func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

        /// The decoder of a value inside this one: its keys are not the record's.
        var nested: PlaceholderDecoder { PlaceholderDecoder(keys: KeyList(), depth: depth + 1) }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let decoder: PlaceholderDecoder
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { [] }

        func read(_ key: Key) {
            if decoder.depth == 0 { decoder.keys.add(key.stringValue) }
        }

        /// Every key is there, so each is then read; asking is not reading (a custom `init(from:)`
        /// may ask for a key it only reads from older rows).
        func contains(_ key: Key) -> Bool { true }

        /// Every optional property is nil: nothing of its type needs a placeholder.
        func decodeNil(forKey key: Key) throws -> Bool {
            read(key)
            return true
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            read(key)
            return false
        }

        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            read(key)
            return ""
        }

        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            read(key)
            return 0
        }

        func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
            read(key)
            return 0
        }

        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { zero(key) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { zero(key) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { zero(key) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { zero(key) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { zero(key) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { zero(key) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { zero(key) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { zero(key) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { zero(key) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { zero(key) }

        private func zero<Integer: FixedWidthInteger>(_ key: Key) -> Integer {
            read(key)
            return 0
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            read(key)
            do {
                return try RecordCodingKeys.placeholder(type, decoder: decoder.nested)
            } catch let error as Undecodable {
                throw error
            } catch {
                throw Undecodable(key: key.stringValue, type: "\(type)", reason: "\(error)")
            }
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
            -> KeyedDecodingContainer<NestedKey>
        {
            read(key)
            return KeyedDecodingContainer(Keyed<NestedKey>(decoder: decoder.nested))
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            read(key)
            return Unkeyed(decoder: decoder.nested)
        }

        func superDecoder() throws -> any Decoder { decoder.nested }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            read(key)
            return decoder.nested
        }
    }

    /// An empty array.
    struct Unkeyed: UnkeyedDecodingContainer {
        let decoder: PlaceholderDecoder
        var codingPath: [any CodingKey] { [] }
        var count: Int? { 0 }
        var isAtEnd: Bool { true }
        var currentIndex: Int { 0 }

        private func end() -> DecodingError {
            DecodingError.valueNotFound(Any.self, .init(codingPath: [], debugDescription: "an empty placeholder array"))
        }

        mutating func decodeNil() throws -> Bool { true }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw end() }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
            -> KeyedDecodingContainer<NestedKey>
        { throw end() }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw end() }
        mutating func superDecoder() throws -> any Decoder { throw end() }
    }

    /// A single value: the placeholder of its type.
    struct Single: SingleValueDecodingContainer {
        let decoder: PlaceholderDecoder
        var codingPath: [any CodingKey] { [] }

        func decodeNil() -> Bool { false }
        func decode(_ type: Bool.Type) throws -> Bool { false }
        func decode(_ type: String.Type) throws -> String { "" }
        func decode(_ type: Double.Type) throws -> Double { 0 }
        func decode(_ type: Float.Type) throws -> Float { 0 }
        func decode(_ type: Int.Type) throws -> Int { 0 }
        func decode(_ type: Int8.Type) throws -> Int8 { 0 }
        func decode(_ type: Int16.Type) throws -> Int16 { 0 }
        func decode(_ type: Int32.Type) throws -> Int32 { 0 }
        func decode(_ type: Int64.Type) throws -> Int64 { 0 }
        func decode(_ type: UInt.Type) throws -> UInt { 0 }
        func decode(_ type: UInt8.Type) throws -> UInt8 { 0 }
        func decode(_ type: UInt16.Type) throws -> UInt16 { 0 }
        func decode(_ type: UInt32.Type) throws -> UInt32 { 0 }
        func decode(_ type: UInt64.Type) throws -> UInt64 { 0 }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try RecordCodingKeys.placeholder(type, decoder: decoder.nested)
        }
    }
}
