import Foundation
import SyncProtocol
import Testing

/// StrictJSON stands between the network and Foundation's decoder: it must refuse what could be
/// read two ways (repeated keys), what could exhaust the server (deep nesting), and anything that
/// is not RFC 8259 JSON, and it must never crash on hostile input.
@Suite("Strict JSON")
struct StrictJSONTests {
    enum Outcome: Equatable {
        case accepted, syntax, duplicateKey, tooDeep, tooManyValues
    }

    func outcome(_ text: String, maximumDepth: Int = 32) -> Outcome {
        outcome(Array(text.utf8), maximumDepth: maximumDepth)
    }

    func outcome(_ bytes: [UInt8], maximumDepth: Int = 32) -> Outcome {
        do {
            try StrictJSON.validate(bytes, maximumDepth: maximumDepth)
            return .accepted
        } catch {
            switch error {
            case .syntax: return .syntax
            case .duplicateKey: return .duplicateKey
            case .tooDeep: return .tooDeep
            case .tooManyValues: return .tooManyValues
            }
        }
    }

    @Test(arguments: [
        #"{"a":1,"a":2}"#,
        #"{"a":1,"b":2,"a":3}"#,
        #"{"a":1,"\u0061":2}"#,  // an escape spelling the same key
        #"{"\u0061":1,"\u0061":2}"#,
        #"{"/":1,"\/":2}"#,  // the optional escape of '/'
        #"{"é":1,"\u00e9":2}"#,  // raw UTF-8 and its escape
        #"{"\u00e9":1,"e\u0301":2}"#,  // canonically equivalent spellings, one key for Swift
        #"{"😀":1,"\ud83d\ude00":2}"#,  // a surrogate pair and the raw character
        #"{"":1,"":2}"#,
        #"{"x":{"a":1,"a":1}}"#,  // deep inside
        #"[{"ok":1},{"a":[{"b":1,"b":1}]}]"#,
    ])
    func repeatedKeysAreRefused(_ document: String) {
        #expect(outcome(document) == .duplicateKey)
    }

    @Test(arguments: [
        #"{"a":1,"A":2}"#,  // keys are case-sensitive
        #"{"a":{"a":1},"b":{"a":2}}"#,  // the same key in different objects
        #"[{"a":1},{"a":1}]"#,
        #"{"a ":1,"a":2}"#,
        #"{"e\u0301":1,"e":2}"#,
    ])
    func distinctKeysAreAccepted(_ document: String) {
        #expect(outcome(document) == .accepted)
    }

    /// `maximumDepth` counts open arrays and objects, empty ones included; scalars add nothing.
    @Test func nestingExactlyAtTheLimitIsAcceptedAndOneMoreIsRefused() {
        for depth in [1, 2, 31, 32] {
            #expect(outcome(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)) == .accepted)
            #expect(outcome(nestedObjects(depth)) == .accepted)
        }
        #expect(outcome(String(repeating: "[", count: 33) + String(repeating: "]", count: 33)) == .tooDeep)
        #expect(outcome(nestedObjects(33)) == .tooDeep)
        #expect(outcome(#"{"a":[{"b":[]}]}"#, maximumDepth: 4) == .accepted)
        #expect(outcome(#"{"a":[{"b":[]}]}"#, maximumDepth: 3) == .tooDeep)
        #expect(outcome(#"{"a":[{"b":[1]}]}"#, maximumDepth: 3) == .tooDeep)
        #expect(outcome("[]", maximumDepth: 0) == .tooDeep)
        #expect(outcome("1", maximumDepth: 0) == .accepted)
        // Width is not depth.
        #expect(
            outcome("[" + Array(repeating: "[[]]", count: 10_000).joined(separator: ",") + "]", maximumDepth: 3)
                == .accepted)
    }

    /// Every value counts, wherever it nests, the document itself too: a body of tiny values is
    /// refused before a decoder builds a tree of it.
    @Test func valuesExactlyAtTheLimitAreAcceptedAndOneMoreIsRefused() throws {
        func values(_ count: Int) -> [UInt8] {
            Array(("{\"x\":[" + Array(repeating: "0", count: count - 2).joined(separator: ",") + "]}").utf8)
        }
        #expect(throws: Never.self) { try StrictJSON.validate(values(1_000), maximumDepth: 32, maximumValues: 1_000) }
        #expect(throws: StrictJSON.Problem.tooManyValues(limit: 1_000, offset: 2_002)) {
            try StrictJSON.validate(values(1_001), maximumDepth: 32, maximumValues: 1_000)
        }
        #expect(outcome(values(StrictJSON.maximumValues)) == .accepted)
        #expect(outcome(values(StrictJSON.maximumValues + 1)) == .tooManyValues)
    }

    /// Foundation's decoder recurses; StrictJSON runs first and must not, whatever the input.
    @Test func aHundredThousandOpenBracketsDoNotCrash() {
        let open = [UInt8](repeating: UInt8(ascii: "["), count: 100_000)
        #expect(outcome(open) == .tooDeep)
        #expect(outcome(open, maximumDepth: .max) == .syntax)  // truncated, found without recursing
        let balanced = open + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)
        #expect(outcome(balanced, maximumDepth: .max) == .accepted)
        let objects = Array(String(repeating: #"{"a":"#, count: 100_000).utf8)
        #expect(outcome(objects) == .tooDeep)
        #expect(
            errorCode { _ = try ProtocolJSON.decode(PullRequest.self, from: Data(balanced), limits: .standard) }
                == .malformedJSON)
    }

    @Test(arguments: [
        "", " ", "{", "[", #"{"a""#, #"{"a":"#, #"{"a":1"#, #"{"a":1,"#, "[1,", #""abc"#, #""abc\"#, "tru", "nul",
        #"{"a":"\u00"#, "-", "1e", "1.",
    ])
    func truncatedDocumentsAreRefused(_ document: String) {
        #expect(outcome(document) == .syntax)
    }

    @Test(arguments: ["{} x", "{}{}", "1 2", "{},", "[] ]", #"{"a":1}}"#, "{}\u{0}", "null null"])
    func trailingGarbageIsRefused(_ document: String) {
        #expect(outcome(document) == .syntax)
    }

    @Test func whitespaceIsOnlySpaceTabLineFeedAndCarriageReturn() {
        #expect(outcome(" \t\r\n{ \"a\" :\t1 ,\r\n\"b\":[ ] }\n") == .accepted)
        for other in ["\u{0B}", "\u{0C}", "\u{A0}", "\u{FEFF}", "\u{2028}"] {
            #expect(outcome(other + "{}") == .syntax, "\(other.unicodeScalars.first!.value)")
            #expect(outcome("{}" + other) == .syntax)
        }
    }

    @Test func rawControlCharactersInStringsAreRefusedAndEscapedOnesAccepted() {
        for byte in UInt8(0)..<0x20 {
            #expect(outcome([UInt8(ascii: "\"")] + [byte] + [UInt8(ascii: "\"")]) == .syntax, "byte \(byte)")
            #expect(outcome(String(format: "\"\\u%04x\"", byte)) == .accepted)
        }
        #expect(outcome("\"\u{7F}\"") == .accepted)  // DEL is not a control character for JSON
    }

    @Test(arguments: [
        #""\x41""#, #""\'""#, #""\a""#, #""\u12""#, #""\u12G4""#, #""\uZZZZ""#, #""\U0041""#, #""\""#, #""\ ""#,
        #""\0""#,
    ])
    func badEscapesAreRefused(_ document: String) {
        #expect(outcome(document) == .syntax)
    }

    @Test func everyEscapeOfRFC8259IsAccepted() {
        #expect(outcome(#""\" \\ \/ \b \f \n \r \t \u0041 \u00e9 \uFFFF \ud83d\ude00""#) == .accepted)
    }

    /// An unpaired surrogate is no character: Foundation's decoder refuses it, and refusing it here
    /// makes the answer malformed_json rather than invalid_message.
    @Test(arguments: [
        #""\ud800""#, #""\udc00""#, #""\udfff""#, #""\ud800x""#, #""\ud800\u0041""#, #""\ud800\ud800""#,
        #""\ude00\ud83d""#, #""\ud83d""#,
    ])
    func unpairedSurrogateEscapesAreRefused(_ document: String) {
        #expect(outcome(document) == .syntax)
        #expect(
            errorCode { _ = try ProtocolJSON.decode(String.self, from: Data(document.utf8), limits: .standard) }
                == .malformedJSON)
    }

    @Test func invalidUTF8IsRefused() {
        let quote = UInt8(ascii: "\"")
        for bytes: [UInt8] in [
            [0xFF], [0xC3], [0xC0, 0x80], [0xE2, 0x82], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80],
        ] {
            #expect(outcome([quote] + bytes + [quote]) == .syntax, "\(bytes)")
            #expect(
                errorCode {
                    _ = try ProtocolJSON.decode(String.self, from: Data([quote] + bytes + [quote]), limits: .standard)
                }
                    == .malformedJSON)
        }
        #expect(outcome([quote, 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80, quote]) == .accepted)
        #expect(outcome([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) == .syntax, "a byte order mark")
    }

    @Test(arguments: [
        "0", "-0", "1", "-1", "10", "1.5", "-1.5", "0.0", "1e5", "1E5", "1e+5", "1e-5", "-1.5E-05", "1e400",
        "123456789012345678901234567890",
    ])
    func validNumbersAreAccepted(_ number: String) {
        #expect(outcome(number) == .accepted)
        #expect(outcome("[\(number)]") == .accepted)
    }

    @Test(arguments: [
        "01", "-01", "00", "+1", ".5", "1.", "1.e5", "1e", "1e+", "-", "--1", "0x10", "1_000", "NaN", "Infinity",
        "-Infinity", "1.5.5", "- 1", "１",
    ])
    func invalidNumbersAreRefused(_ number: String) {
        #expect(outcome(number) == .syntax)
        #expect(outcome("[\(number)]") == .syntax)
    }

    @Test(arguments: [
        "True", "NULL", "nulls", "undefined", "'a'", "[1,]", #"{"a":1,}"#, "{a:1}", "{1:1}", #"{"a" 1}"#,
        #"{"a"::1}"#, "[1 2]", "/* */{}", "// x\n{}", #"{"a":1;"b":2}"#,
    ])
    func otherSyntaxErrorsAreRefused(_ document: String) {
        #expect(outcome(document) == .syntax)
    }

    @Test func problemsSayWhereAndWhat() {
        #expect(throws: StrictJSON.Problem.duplicateKey("a", offset: 7)) {
            try StrictJSON.validate(Array(#"{"a":1,"a":2}"#.utf8), maximumDepth: 32)
        }
        #expect(throws: StrictJSON.Problem.tooDeep(limit: 2, offset: 2)) {
            try StrictJSON.validate(Array("[[[]]]".utf8), maximumDepth: 2)
        }
        let problem = StrictJSON.Problem.duplicateKey("site", offset: 17)
        #expect(problem.description.contains("site") && problem.description.contains("17"))
    }

    @Test func protocolJSONAnswersMalformedJSONBeforeDecoding() {
        let repeated =
            #"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"00000000000000000000000000000000","site":"ffffffffffffffffffffffffffffffff"}"#
        #expect(
            errorCode { _ = try ProtocolJSON.decode(PullRequest.self, from: Data(repeated.utf8), limits: .standard) }
                == .malformedJSON)
        var shallow = Limits.standard
        shallow.maxNestingDepth = 1
        let nested = #"{"protocolVersion":1,"schemaVersion":"1.0.0","site":"00000000000000000000000000000000","x":[]}"#
        #expect(
            errorCode { _ = try ProtocolJSON.decode(PullRequest.self, from: Data(nested.utf8), limits: shallow) }
                == .malformedJSON)
        #expect(
            errorCode { _ = try ProtocolJSON.decode(PullRequest.self, from: Data(nested.utf8), limits: .standard) }
                == nil)
    }

    private func nestedObjects(_ depth: Int) -> String {
        String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)
    }
}
