/// HTTP header fields of an `HTTPClient` request or response: ordered name/value pairs whose names
/// compare without regard to ASCII case, as HTTP requires (RFC 9110, section 5.1).
///
/// ```swift
/// var headers: HTTPClientHeaders = ["Content-Type": "application/json"]
/// headers["Authorization"] = "Bearer \(token)"
/// response.headers["content-type"]  // "application/json", whatever case the server wrote
/// ```
///
/// Response headers are the ones libcurl hands to `CURLOPT_HEADERFUNCTION` for the final response
/// (https://curl.se/libcurl/c/CURLOPT_HEADERFUNCTION.html), with surrounding whitespace removed.
public struct HTTPClientHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence,
    CustomStringConvertible
{
    /// One header field.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in order.
    public private(set) var fields: [Field] = []

    public init() {}

    public init(_ fields: [Field]) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value of `name`, compared without regard to case; setting replaces every field of
    /// that name (`nil` removes them).
    public subscript(name: String) -> String? {
        get { fields.first { Self.namesMatch($0.name, name) }?.value }
        set {
            remove(name: name)
            if let newValue { add(name: name, value: newValue) }
        }
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    /// Appends a field, keeping others of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    /// One `Name: value` line per field. Mind that a request's headers may hold a token.
    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// ASCII case-insensitive comparison without allocating.
    static func namesMatch(_ a: String, _ b: String) -> Bool {
        let a = a.utf8
        let b = b.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            guard x | 0x20 == y | 0x20, (0x61...0x7A).contains(x | 0x20) else { return false }
        }
        return true
    }

    /// A token of RFC 9110, section 5.6.2: what a field name may be.
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// No CR, LF or NUL, which would end the field early or smuggle another one in.
    static func isValidValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }
}
