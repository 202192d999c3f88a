/// A strict check of a JSON document before it is decoded: RFC 8259 syntax (one value, nothing
/// after it but whitespace; strings of valid UTF-8 without unpaired surrogate escapes), no object
/// that repeats a key, and nesting no deeper than a limit. Keys are compared as Swift strings,
/// after escapes are undone: `"a"` and `"\u0061"` are the same key, and so are `"\u00e9"` and
/// `"e\u0301"` (canonically equivalent), since Foundation's decoder would silently keep only one
/// of either pair, which lets two parties read one message differently. Foundation's decoder also
/// recurses on nesting; this runs first, iteratively, in one pass with memory bounded by the
/// nesting.
///
/// ```swift
/// try StrictJSON.validate(Array(#"{"a":1,"a":2}"#.utf8), maximumDepth: 32)  // throws .duplicateKey
/// ```
///
/// See <https://www.rfc-editor.org/rfc/rfc8259> (section 4: "names within an object SHOULD be unique").
public enum StrictJSON {
    public enum Problem: Error, Sendable, Hashable, CustomStringConvertible {
        case syntax(offset: Int, expected: String)
        case duplicateKey(String, offset: Int)
        case tooDeep(limit: Int, offset: Int)
        case tooManyValues(limit: Int, offset: Int)

        public var description: String {
            switch self {
            case .syntax(let offset, let expected): "byte \(offset): expected \(expected)"
            case .duplicateKey(let key, let offset):
                "byte \(offset): key \(String(key.prefix(64)).debugDescription) appears twice in one object"
            case .tooDeep(let limit, let offset): "byte \(offset): nested deeper than \(limit) levels"
            case .tooManyValues(let limit, let offset): "byte \(offset): more than \(limit) values in one document"
            }
        }
    }

    /// The byte a one-character escape stands for (10 for the `n` of `\n`…); nil for `u` and anything
    /// else.
    static func unescaped(_ escape: UInt8) -> UInt8? {
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): escape
        case UInt8(ascii: "b"): 8
        case UInt8(ascii: "f"): 12
        case UInt8(ascii: "n"): 10
        case UInt8(ascii: "r"): 13
        case UInt8(ascii: "t"): 9
        default: nil
        }
    }

    /// The most values (objects, arrays, strings, numbers and literals, counted wherever they nest)
    /// a document may hold: a decoder that builds a tree of the document first takes tens of bytes
    /// a value, however few bytes the text spends on each. No message of the protocol a client
    /// writes comes near it: a value of a change takes at least nine bytes, so an 8 MiB push holds
    /// fewer than 950,000.
    public static let maximumValues = 1_000_000

    public static func validate(_ bytes: [UInt8], maximumDepth: Int, maximumValues: Int = maximumValues)
        throws(Problem)
    {
        var scanner = Scanner(bytes: bytes, maximumDepth: maximumDepth, maximumValues: maximumValues)
        try scanner.document()
    }

    private struct Scanner {
        let bytes: [UInt8]
        let maximumDepth: Int
        let maximumValues: Int
        var values = 0
        var offset = 0
        /// One entry per open container: the keys seen so far for an object, nil for an array.
        var open: [Set<String>?] = []

        init(bytes: [UInt8], maximumDepth: Int, maximumValues: Int) {
            self.bytes = bytes
            self.maximumDepth = maximumDepth
            self.maximumValues = maximumValues
        }

        mutating func document() throws(Problem) {
            skipWhitespace()
            try value()
            skipWhitespace()
            guard offset == bytes.count else { throw .syntax(offset: offset, expected: "the end of the document") }
        }

        /// Reads one value; containers are walked with an explicit stack, never by recursion, so
        /// however deep the nesting (up to the limit) the call stack stays flat.
        mutating func value() throws(Problem) {
            // After a container opens, its first element (or first member) is read next.
            var firstOfContainer = try beginValue()
            while !open.isEmpty {
                let isObject = open[open.count - 1] != nil
                if !firstOfContainer {
                    skipWhitespace()
                    guard let byte = peek() else { throw .syntax(offset: offset, expected: "',' or a closing bracket") }
                    if byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        offset += 1
                        open.removeLast()
                        continue
                    }
                    guard byte == UInt8(ascii: ",") else {
                        throw .syntax(offset: offset, expected: isObject ? "',' or '}'" : "',' or ']'")
                    }
                    offset += 1
                }
                if isObject { try memberKey() }
                firstOfContainer = try beginValue()
            }
        }

        /// Starts a value: a scalar is read whole, an empty container too; a non-empty container
        /// is pushed on the stack and true returned (its elements are the caller's to read).
        mutating func beginValue() throws(Problem) -> Bool {
            skipWhitespace()
            guard let byte = peek() else { throw .syntax(offset: offset, expected: "a value") }
            values += 1
            guard values <= maximumValues else { throw .tooManyValues(limit: maximumValues, offset: offset) }
            switch byte {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard open.count < maximumDepth else { throw .tooDeep(limit: maximumDepth, offset: offset) }
                offset += 1
                skipWhitespace()
                let isObject = byte == UInt8(ascii: "{")
                if peek() == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    offset += 1
                    return false
                }
                open.append(isObject ? [] : nil)
                return true
            case UInt8(ascii: "\""): _ = try string()
            case UInt8(ascii: "t"): try literal("true")
            case UInt8(ascii: "f"): try literal("false")
            case UInt8(ascii: "n"): try literal("null")
            default: try number()
            }
            return false
        }

        /// `"key":` of a member of the innermost object; its value is read next.
        mutating func memberKey() throws(Problem) {
            skipWhitespace()
            let start = offset
            guard peek() == UInt8(ascii: "\"") else { throw .syntax(offset: offset, expected: "a key in quotes") }
            let key = try string()
            guard open[open.count - 1]!.insert(key).inserted else { throw .duplicateKey(key, offset: start) }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw .syntax(offset: offset, expected: "':'") }
            offset += 1
        }

        /// A string's content with escapes undone.
        mutating func string() throws(Problem) -> String {
            let start = offset
            offset += 1
            var content: [UInt8] = []
            while true {
                guard let byte = peek() else { throw .syntax(offset: offset, expected: "the closing quote") }
                offset += 1
                switch byte {
                case UInt8(ascii: "\""):
                    // RFC 8259 section 8.1: JSON text is UTF-8. (Escapes below only add valid UTF-8.)
                    guard let text = String(validating: content, as: UTF8.self) else {
                        throw .syntax(offset: start, expected: "a string of valid UTF-8")
                    }
                    return text
                case UInt8(ascii: "\\"):
                    guard let escape = peek() else { throw .syntax(offset: offset, expected: "an escape") }
                    offset += 1
                    switch (escape, StrictJSON.unescaped(escape)) {
                    case (_, let plain?): content.append(plain)
                    case (UInt8(ascii: "u"), nil):
                        let escapeStart = offset - 2
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard peek() == UInt8(ascii: "\\"), offset + 1 < bytes.count,
                                bytes[offset + 1] == UInt8(ascii: "u")
                            else { throw .syntax(offset: offset, expected: "a low surrogate escape") }
                            offset += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else {
                                throw .syntax(offset: offset - 6, expected: "a low surrogate escape")
                            }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        // An unpaired surrogate is no character; Foundation's decoder refuses it
                        // too, which would otherwise surface as invalid_message, not malformed_json.
                        guard let character = Unicode.Scalar(scalar) else {
                            throw .syntax(offset: escapeStart, expected: "no unpaired surrogate escape")
                        }
                        content.append(contentsOf: Array(String(character).utf8))
                    default: throw .syntax(offset: offset - 1, expected: "a valid escape")
                    }
                case 0..<0x20:
                    throw .syntax(offset: offset - 1, expected: "an escaped control character")
                default:
                    content.append(byte)
                }
            }
        }

        mutating func hex4() throws(Problem) -> UInt32 {
            var scalar: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = peek() else { throw .syntax(offset: offset, expected: "four hex digits") }
                let digit: UInt32
                switch byte {
                case 48...57: digit = UInt32(byte - 48)
                case 97...102: digit = UInt32(byte - 87)
                case 65...70: digit = UInt32(byte - 55)
                default: throw .syntax(offset: offset, expected: "four hex digits")
                }
                scalar = scalar << 4 | digit
                offset += 1
            }
            return scalar
        }

        mutating func number() throws(Problem) {
            let start = offset
            if peek() == UInt8(ascii: "-") { offset += 1 }
            guard let first = peek(), (48...57).contains(first) else {
                throw .syntax(offset: start, expected: "a value")
            }
            offset += 1
            if first != UInt8(ascii: "0") { digits() }
            if peek() == UInt8(ascii: ".") {
                offset += 1
                guard digits() > 0 else { throw .syntax(offset: offset, expected: "digits after '.'") }
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                offset += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { offset += 1 }
                guard digits() > 0 else { throw .syntax(offset: offset, expected: "exponent digits") }
            }
        }

        @discardableResult
        mutating func digits() -> Int {
            let start = offset
            while let byte = peek(), (48...57).contains(byte) { offset += 1 }
            return offset - start
        }

        mutating func literal(_ word: StaticString) throws(Problem) {
            let expected = word.withUTF8Buffer { Array($0) }
            guard offset + expected.count <= bytes.count, Array(bytes[offset..<offset + expected.count]) == expected
            else { throw .syntax(offset: offset, expected: "\(word)") }
            offset += expected.count
        }

        mutating func skipWhitespace() {
            while let byte = peek(), byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { offset += 1 }
        }

        func peek() -> UInt8? { offset < bytes.count ? bytes[offset] : nil }
    }
}
