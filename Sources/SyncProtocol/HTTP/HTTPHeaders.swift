/// HTTP header fields, of the server's requests and responses and of the client's: an ordered list
/// of name/value pairs whose names compare without regard to ASCII case (RFC 9110, section 5.1).
///
/// Names keep the spelling they were given; lookups ignore ASCII case, as HTTP requires. A name may
/// appear more than once (`values(for:)` returns all of them).
///
/// ```swift
/// var headers: HTTPHeaders = ["Content-Type": "application/json"]
/// headers.add(name: "Vary", value: "Accept-Encoding")
/// headers["content-type"]  // "application/json"
/// headers["Cache-Control"] = "no-store"  // replaces every Cache-Control field
/// ```
///
/// The server reads request headers from libmicrohttpd's `MHD_get_connection_values` with
/// `.HEADER_KIND` (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002drequests);
/// the client reads response headers from libcurl's `CURLOPT_HEADERFUNCTION` for the final
/// response (https://curl.se/libcurl/c/CURLOPT_HEADERFUNCTION.html), surrounding whitespace removed.
public struct HTTPHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence, CustomStringConvertible {
    /// One header field.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The fields in the order they were added.
    public private(set) var fields: [Field] = []

    public init() {}

    public init(_ fields: [(name: String, value: String)]) {
        self.fields = fields.map { Field(name: $0.name, value: $0.value) }
    }

    public init(_ fields: [Field]) {
        self.fields = fields
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.fields = elements.map { Field(name: $0.0, value: $0.1) }
    }

    /// The first value for `name` (ASCII case-insensitive); setting replaces every field of that name
    /// (`nil` removes them).
    public subscript(name: String) -> String? {
        get { fields.first { Self.namesMatch($0.name, name) }?.value }
        set {
            remove(name: name)
            if let newValue {
                add(name: name, value: newValue)
            }
        }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// Whether a field called `name` is present.
    public func contains(_ name: String) -> Bool {
        fields.contains { Self.namesMatch($0.name, name) }
    }

    /// Appends a field, keeping any existing ones of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Removes every field called `name`.
    public mutating func remove(name: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
    }

    public var count: Int { fields.count }

    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// Equal when the same fields appear in the same order, names compared case-insensitively.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { namesMatch($0.name, $1.name) && $0.value == $1.value }
    }

    /// Hashes what ``==`` compares: names without regard to ASCII case, values as they are.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields.count)
        for field in fields {
            for byte in field.name.utf8 { hasher.combine(Self.lowercasedASCII(byte)) }
            hasher.combine(field.value)
        }
    }

    /// ASCII case-insensitive comparison without allocating.
    package static func namesMatch(_ a: String, _ b: String) -> Bool {
        let a = a.utf8
        let b = b.utf8
        guard a.count == b.count else { return false }
        for (x, y) in zip(a, b) where x != y {
            guard lowercasedASCII(x) == lowercasedASCII(y) else { return false }
        }
        return true
    }

    private static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        (byte >= 0x41 && byte <= 0x5A) ? byte + 0x20 : byte
    }

    /// RFC 9110's `token` (one or more `tchar`, section 5.6.2): what a field name (and a method)
    /// must be, sent or received.
    package static func isToken(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                default:
                    return "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// RFC 9110's `field-value` (section 5.5): no control characters but tab, so a value cannot
    /// end its field early or smuggle another one in.
    package static func isFieldValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }
}
