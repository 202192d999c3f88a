import Foundation
import TestSupport
import Testing

@testable import SyncProtocol

/// `ProtocolJSON.decodePush` reads ordinary push bodies in one pass (``MessageReader``) and
/// leaves every other body to the strict reader. It must answer every body exactly as the strict
/// reader does, value for value (compared as canonical bytes, so -0.0 and 0.0 differ) and error
/// for error (code, message and index): checked over the vectors, the request cases, random
/// pushes written canonically and loosely, and thousands of corruptions of them.
@Suite("Push request reader")
struct MessageReaderTests {
    @Test func ordinaryPushesAreReadInOnePass() throws {
        var random = SeededGenerator(seed: 0x9e11)
        for _ in 0..<200 {
            let body = try RandomPushes.body(&random, names: RandomChanges.plainNames)
            let push = try #require(
                MessageReader.read(body, limits: .standard)?.push, "\(String(decoding: body, as: UTF8.self))")
            try expectSameAnswer(body)
            #expect(push.changes.count <= 8)
        }
        let stored = try ProtocolFiles.data("vectors/push-request.basic.json")
        #expect(MessageReader.read(stored, limits: .standard) != nil)
    }

    /// A body as a client writes it (canonical, reals that are whole numbers, as the bench's todos
    /// carry) has every change's text in place, and the texts are the writer's bytes; whitespace,
    /// an upper-case site, an escape, members or names out of order, or a fraction leave the
    /// change to be written again. (Every other test here checks, through `expectSameAnswer`, that
    /// no text is ever given that differs from the writer's.)
    @Test func canonicalChangesKeepTheirTextAndOthersDoNot() throws {
        let site = try #require(SiteID(hex: "00112233445566778899aabbccddeeff"))
        var changes: [Change] = []
        for index in 1...20 {
            let id = WireValue.text("id-\(index)")
            var columns: [String: WireValue] = [:]
            if index % 5 != 0 {
                columns["id"] = id
                columns["title"] = .text("Buy milk \(index) é")
                columns["done"] = .integer(Int64(index % 2))
                columns["updatedAt"] = .real(1.7e9 + Double(index))
                columns["picture"] = .blob(Data([1, 2, UInt8(index)]))
                columns["note"] = .null
                columns["Zeta"] = .real(-Double(index))
            }
            let clock = try #require(ChangeClock(milliseconds: 1_764_000_000_000, counter: Int64(index)))
            changes.append(
                Change(
                    table: "todos", key: ["id": id], op: index % 5 == 0 ? .delete : .insert, columns: columns,
                    clock: clock, site: site, seq: Int64(index)))
        }
        let body = try ProtocolJSON.encode(
            PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: site, changes: changes))
        let (push, texts) = try #require(MessageReader.read(body, limits: .standard))
        #expect(push.changes == changes)
        #expect(texts.count == changes.count)
        for (change, text) in zip(changes, texts) {
            let text = try #require(text)
            #expect(body[text.change] == Data(try change.canonicalJSON().utf8))
            #expect(body[text.key] == Data(try change.canonicalKeyJSON().utf8))
        }
        let written = String(decoding: body, as: UTF8.self)
        let edits: [(String, String)] = [
            (#""op":"#, #""op": "#),
            (#"00112233445566778899aabbccddeeff","table""#, #"00112233445566778899AABBCCDDEEFF","table""#),
            (#""Buy milk"#, #""Buy\u0020milk"#), (#""title":{"text""#, #""title":{ "text""#),
            (#""todos""#, #""tod\u006fs""#), (#""insert""#, #""ins\u0065rt""#),
            (#"{"integer":"1"}"#, #"{"integer":"\u0031"}"#),
            (#""updatedAt":{"real":1700000001}"#, #""updatedAt":{"real":1700000001.5}"#),
            (#""updatedAt":{"real":1700000001}"#, #""updatedAt":{"real":1.700000001e9}"#),
            (#""Zeta":{"real":-1}"#, #""Zeta":{"real":-1.0}"#), (#"{"blob":"AQIB"}"#, #"{"blob":"AQ\/B"}"#),
            (#"{"Zeta":{"real":-1},"done":{"integer":"1"}"#, #"{"done":{"integer":"1"},"Zeta":{"real":-1}"#),
            (#","key":{"id":{"text":"id-1"}},"op":"insert""#, #","op":"insert","key":{"id":{"text":"id-1"}}"#),
        ]
        for (from, to) in edits {
            let range = try #require(written.range(of: from), "\(from)")
            let edited = Data(written.replacingCharacters(in: range, with: to).utf8)
            try expectSameAnswer(edited)
            guard let (_, texts) = MessageReader.read(edited, limits: .standard) else { continue }
            #expect(texts.contains { $0 == nil }, "\(to)")
        }
    }

    @Test func vectorsAndRequestCasesGetTheStrictReadersAnswer() throws {
        for name in ProtocolFiles.messageVectorFileNames {
            try expectSameAnswer(try ProtocolFiles.data("vectors/\(name)"))
        }
        let cases = RequestCase.all
        #expect(cases.count >= 50)
        for request in cases {
            try expectSameAnswer(Data(request.body.utf8), limits: request.effectiveLimits)
        }
    }

    @Test func looselyWrittenPushesGetTheStrictReadersAnswer() throws {
        var random = SeededGenerator(seed: 0x1005e)
        for _ in 0..<200 {
            let canonical = try RandomPushes.body(&random)
            let loose = try JSONSerialization.data(
                withJSONObject: try JSONSerialization.jsonObject(with: canonical), options: [.prettyPrinted])
            try expectSameAnswer(loose)
        }
    }

    /// Truncations, replaced and inserted bytes, and edits aimed at what the one-pass reader
    /// handles itself (escapes, number forms, repeated and unknown members, nulls, depth).
    @Test func corruptedPushesGetTheStrictReadersAnswer() throws {
        var random = SeededGenerator(seed: 0xbadb0d1)
        let replacements = Array(#"{}[],:"\ 0123456789-+.eEnul/ftrxé"#.utf8) + [0x00, 0x0A, 0x1F, 0x80, 0xC3, 0xFF]
        let edits: [(String, String)] = [
            (#""seq":"#, #""seq":1.0,"x":"#), (#""seq":"#, #""seq":-0,"y":"#), (#""seq":"#, #""seq":1e2,"z":"#),
            (#""seq":"#, #""seq":null,"w":"#), (#""columns":"#, #""columns":null,"v":"#),
            (#""key":{"#, #""key":{"\u0069d":{"null":true},"#),
            (#""text":""#, #""text":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"#),
            (#""text":""#, #""text":"\ud800"#), (#""text":""#, #""text":"\u12"#),
            (#"{"text""#, #"{"null":true,"text""#),
            (#""real":"#, #""real":1e400,"q":"#), (#""real":"#, #""real":1e-400,"q":"#),
            (#""real":"#, #""real":-0,"q":"#),
            (#""real":"#, #""real":0.1000000000000000055511151231257827,"q":"#), (#""real":"#, #""real":"NaN","q":"#),
            (#""real":"#, #""real":9007199254740993,"q":"#), (#""real":"#, #""real":1E5,"q":"#),
            (#""real":"#, #""real":00,"q":"#), (#""real":"#, #""real":"-Infinity","q":"#),
            (#""integer":""#, #""integer":"-0"#), (#""integer":""#, #""integer":"+"#), (#""blob":""#, #""blob":"AB=="#),
            (#""op":""#, #""op":"upsert"#), (#""protocolVersion":"#, #""protocolVersion":1,"protocolVersion":"#),
            (#""site":""#, #""site":"zz"#), (#""clock":""#, #""clock":"01-"#),
            (#""schemaVersion":""#, #""schemaVersion":"1."#),
            (#""changes":["#, #""changes":[[],"#), (#""changes":["#, #""changes":[{"table":{"a":{"b":{"c":{}}}}},"#),
            ("é", "e\u{301}"), (#""title""#, #""ti\u0074le""#), ("{", "\u{FEFF}{"),
            (#""id""#, #""ID":{"null":true},"id""#),
        ]
        var checked = 0
        for _ in 0..<300 {
            let body = Array(try RandomPushes.body(&random))
            for _ in 0..<8 {
                var corrupted = body
                switch random.next() % 4 {
                case 0: corrupted = Array(body.prefix(Int(random.next() % UInt64(body.count))))
                case 1:
                    corrupted[Int(random.next() % UInt64(body.count))] =
                        replacements[Int(random.next() % UInt64(replacements.count))]
                case 2:
                    corrupted.insert(
                        replacements[Int(random.next() % UInt64(replacements.count))],
                        at: Int(random.next() % UInt64(body.count)))
                default:
                    let (from, to) = edits[Int(random.next() % UInt64(edits.count))]
                    let text = String(decoding: body, as: UTF8.self)
                    guard let range = text.range(of: from) else { continue }
                    corrupted = Array(text.replacingCharacters(in: range, with: to).utf8)
                }
                try expectSameAnswer(Data(corrupted))
                var shallow = Limits.standard
                shallow.maxNestingDepth = 4
                try expectSameAnswer(Data(corrupted), limits: shallow)
                checked += 1
            }
        }
        #expect(checked > 2_000)
    }

    /// Bodies assembled slot by slot: each form of each slot in an otherwise ordinary body, then
    /// random mixtures; every form must be read exactly as the strict reader reads it, or left to it.
    @Test func everyFormOfEverySlotGetsTheStrictReadersAnswer() throws {
        var random = SeededGenerator(seed: 0x5107)
        for (slot, forms) in PushSlots.slots {
            for form in forms {
                for (limit, ordinary) in [(32, true), (5, true), (4, true), (32, false)] {
                    var limits = Limits.standard
                    limits.maxNestingDepth = limit
                    let body = PushSlots.body(&random, ordinary: ordinary) { name, forms in
                        name == slot ? form : forms[0]
                    }
                    try expectSameAnswer(Data(body.utf8), limits: limits)
                }
            }
        }
        var readInOnePass = 0
        var chooser = SeededGenerator(seed: 0xc40)
        for _ in 0..<3_000 {
            let body = Data(
                PushSlots.body(&random) { _, forms in
                    chooser.next() % 10 < 8 ? forms[0] : forms[Int(chooser.next() % UInt64(forms.count))]
                }.utf8)
            if MessageReader.read(body, limits: .standard) != nil { readInOnePass += 1 }
            try expectSameAnswer(body)
        }
        #expect(readInOnePass > 100)
    }

    /// Keys as a server stores them (canonical JSON) and every value form: the one-pass reading
    /// gives what `JSONDecoder` gives, or the same refusal.
    @Test func keysAndColumnsReadAsJSONDecoderReadsThem() throws {
        var random = SeededGenerator(seed: 0x4e75)
        var texts: [String] = []
        for _ in 0..<500 { texts.append(try RandomChanges.change(&random).canonicalKeyJSON()) }
        for form in PushSlots.valueForms { texts.append(#"{"id":"# + form + "}") }
        texts += ["{}", #"{"id":{"text":"a"}} "#, #"{"id":{"text":"a"}}x"#, #"{"id":{"text":"a"},"id":{"null":true}}"#]
        var readInOnePass = 0
        for text in texts {
            let data = Data(text.utf8)
            if MessageReader.readValues(data) != nil { readInOnePass += 1 }
            let fast = Result { try ProtocolJSON.decodeValues(data) }
            let foundation = Result { try JSONDecoder().decode([String: WireValue].self, from: data) }
            switch (fast, foundation) {
            case (.success(let fast), .success(let foundation)):
                #expect(try ProtocolJSON.encode(fast) == ProtocolJSON.encode(foundation), "\(text)")
            case (.failure, .failure): break
            default: Issue.record("one-pass \(fast), JSONDecoder \(foundation) for \(text)")
            }
        }
        #expect(readInOnePass > 300)
    }

    /// The reader reuses what it made for the bytes before (names, tables, a long text, a site):
    /// strings and sites that differ in one byte only, or in case only, must each be read as
    /// written, in any order.
    @Test func nearlyRepeatedStringsAndSitesAreEachReadAsWritten() throws {
        var random = SeededGenerator(seed: 0x5eed)
        let site = SiteID(bytes: Data(repeating: 0xab, count: 16))!
        let sites = [site, SiteID(bytes: Data(repeating: 0xab, count: 15) + Data([0xac]))!]
        let long = "00000000-0000-4000-8000-000000000000"
        let texts = [long, "10000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000001", "short", ""]
        let names = ["id", "ie", "title", "titlf", "updatedAt", "updatedAu", "done", "DONE"]
        for _ in 0..<50 {
            var changes: [Change] = []
            for index in 0..<Int(1 + random.next() % 12) {
                func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
                var columns: [String: WireValue] = [:]
                for _ in 0..<random.next() % 5 { columns[pick(names)] = .text(pick(texts)) }
                changes.append(
                    Change(
                        table: pick(["todos", "todot", "items"]), key: [pick(names): .text(pick(texts))],
                        op: pick(Change.Operation.allCases), columns: columns,
                        clock: ChangeClock(milliseconds: 1_764_000_000_000, counter: Int64(index))!, site: pick(sites),
                        seq: Int64(index + 1)))
            }
            let push = PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: site, changes: changes)
            var body = String(decoding: try ProtocolJSON.encode(push), as: UTF8.self)
            #expect(MessageReader.read(Data(body.utf8), limits: .standard)?.push == push)
            // A site in capitals is the same site; one digit off is another.
            body = body.replacingOccurrences(
                of: String(describing: sites[1]), with: String(describing: sites[1]).uppercased())
            #expect(MessageReader.read(Data(body.utf8), limits: .standard)?.push == push)
            let page = PullResponse(changes: changes, cursor: "c", hasMore: false, phase: .log, remaining: 0)
            #expect(MessageReader.readPullPage(try ProtocolJSON.encode(page)) == page)
        }
    }

    /// Numbers of up to 15 digits without an exponent are read without `strtod`: each must be the
    /// double `strtod` (Swift's `Double(_:)`) gives, bit for bit.
    @Test func shortRealsAreTheDoublesStrtodGives() throws {
        var random = SeededGenerator(seed: 0xd0b1e)
        var texts = ["0", "-0", "0.0", "-0.000", "1", "999999999999999", "-999999999999999", "0.000000000000001"]
        texts += ["1700000000", "1700000123.5", "123456789.012345", "0.1", "0.3", "2.675", "9007199254740.99"]
        for _ in 0..<20_000 {
            let digits = 1 + Int(random.next() % 15)
            var text = String(random.next() % 1_000_000_000_000_000).prefix(digits)
            while text.count > 1, text.hasPrefix("0") { text.removeFirst() }
            var number = String(text)
            let point = Int(random.next() % UInt64(digits + 1))
            if point > 0, point < number.count {
                number.insert(".", at: number.index(number.startIndex, offsetBy: point))
            } else if point == 0, random.next() % 2 == 0 {
                number = "0." + number
            }
            if random.next() % 2 == 0 { number = "-" + number }
            texts.append(number)
        }
        for text in texts {
            let values = try #require(MessageReader.readValues(Data(#"{"r":{"real":\#(text)}}"#.utf8)), "\(text)")
            guard case .real(let real) = values["r"] else {
                Issue.record("\(text) read as \(String(describing: values["r"]))")
                continue
            }
            #expect(real.bitPattern == Double(text)!.bitPattern, "\(text)")
        }
    }

    private func expectSameAnswer(
        _ body: Data, limits: Limits = .standard, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let fast = Result { () throws(ErrorBody) in try ProtocolJSON.decodePush(from: body, limits: limits) }
        let strict = Result { () throws(ErrorBody) in
            try ProtocolJSON.decode(PushRequest.self, from: body, limits: limits)
        }
        switch (fast, strict) {
        case (.success(let fast), .success(let strict)):
            #expect(try ProtocolJSON.encode(fast) == ProtocolJSON.encode(strict), sourceLocation: sourceLocation)
            // A change's text taken from the body must be the writer's, byte for byte.
            let (push, texts) = try ProtocolJSON.decodePushKeepingText(from: body, limits: limits)
            #expect(texts.count == push.changes.count, sourceLocation: sourceLocation)
            for (change, text) in zip(push.changes, texts) {
                guard let text else { continue }
                #expect(body[text.change] == Data(try change.canonicalJSON().utf8), sourceLocation: sourceLocation)
                #expect(body[text.key] == Data(try change.canonicalKeyJSON().utf8), sourceLocation: sourceLocation)
            }
        case (.failure(let fast), .failure(let strict)):
            // Refusals all come from the strict reader; its message may name either of two bad
            // members of one dictionary (Foundation walks a dictionary in hash order, which
            // differs from one decode to the next), so the message is not compared.
            #expect(fast.error.code == strict.error.code, sourceLocation: sourceLocation)
            #expect(fast.error.changeIndex == strict.error.changeIndex, sourceLocation: sourceLocation)
        default:
            Issue.record(
                "one-pass \(fast), strict \(strict) for \(String(decoding: body, as: UTF8.self))",
                sourceLocation: sourceLocation)
        }
    }
}

enum RandomPushes {
    /// A push of up to 8 random changes of one site, as `ProtocolJSON.encode` writes it.
    static func body(_ random: inout SeededGenerator, names: [String] = RandomChanges.names) throws -> Data {
        let site = SiteID(bytes: Data((0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }))!
        var changes: [Change] = []
        for index in 0..<Int(random.next() % 9) {
            var change = RandomChanges.change(&random, names: names)
            change.site = site
            change.seq = Int64(index + 1)
            changes.append(change)
        }
        return try ProtocolJSON.encode(
            PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 2, 3), site: site, changes: changes))
    }
}

/// The slots of a push body with the forms each may take: the first of each list is what a
/// client writes; the others are what the strict reader refuses or reads some other way.
enum PushSlots {
    static let site = #""9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c""#
    static let protocolVersions = [
        "1", "2", "-1", "1.0", "1e0", "-0", "01", #""1""#, "null", "99999999999999999999", "true",
    ]
    static let schemaVersions = [
        #""1.2.3""#, #""1.2""#, #""01.2.3""#, "null", "1", #""1.2.3\u0000""#, #""1.\u0032.3""#,
    ]
    static let sites = [
        site, #""9A0C6C1E5B2F4D7A8E3B1C0D2F4A6B8C""#, #""zz""#, #""9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8""#, "null",
        #""\u0039a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c""#, #""9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c0""#,
        #""9a0c6c1e5b2f4d7a8e3b1c0d2f4a6bgc""#,
    ]
    static let tables = [
        #""items""#, #""it\"ems""#, #""\u0069tems""#, #""""#, "1", "null", #""\ud800""#, #""é""#, #""e\u0301""#,
        #""a\/b""#,
    ]
    static let valueForms = [
        #"{"text":"r1"}"#, #"{"null":true}"#, #"{"integer":"42"}"#, #"{"real":2.5}"#, #"{"blob":"AAEC"}"#,
        #"{"null":false}"#, #"{"null":1}"#, #"{"integer":"-0"}"#, #"{"integer":"0"}"#,
        #"{"integer":"-9223372036854775808"}"#, #"{"integer":"9223372036854775808"}"#, #"{"integer":"+1"}"#,
        #"{"integer":1}"#, #"{"real":1e-400}"#, #"{"real":-0}"#, #"{"real":0.0}"#, #"{"real":0e5}"#,
        #"{"real":-0.0e-7}"#, #"{"real":1e400}"#, #"{"real":-1e400}"#, #"{"real":"Infinity"}"#,
        #"{"real":"-Infinity"}"#, #"{"real":"NaN"}"#, #"{"real":"Inf\u0069nity"}"#, #"{"real":9007199254740993}"#,
        #"{"real":1E5}"#, #"{"real":1e+5}"#, #"{"real":00}"#, #"{"real":-}"#, #"{"real":.5}"#, #"{"real":2.}"#,
        #"{"real":0.1000000000000000055511151231257827}"#, #"{"real":4.9406564584124654e-324}"#,
        #"{"real":2.4703282292062328e-324}"#, #"{"real":2.4703282292062329e-324}"#,
        #"{"real":1.7976931348623158e308}"#, #"{"real":1.7976931348623159e308}"#,
        #"{"real":123456789012345678901234567890}"#,
        #"{"blob":"AB=="}"#, #"{"blob":""}"#, #"{"blob":"A"}"#, #"{"blob":"AAE\u0043"}"#, #"{"text":"a\u0000b"}"#,
        #"{"text":"\ud83d\ude00"}"#, #"{"text":"\udc00"}"#, #"{"text":"\u00E9\n\"\\\/\b\f\r\t"}"#,
        #"{"text":"\x"}"#, "{}", #"{"text":"a","null":true}"#, #"{"text":"a","text":"b"}"#, #"{"TEXT":"a"}"#, "null",
        "[]", #"{"t\u0065xt":"a"}"#, #"{"text":"tab\#tinside"}"#,
    ]
    static let keyNames = [#""id""#, #""i\u0064""#, #""é""#, #""e\u0301""#, #""ID""#, #""""#]
    static let ops = [#""insert""#, #""update""#, #""delete""#, #""Insert""#, "null", "1"]
    static let clocks = [
        #""1764000000000-0""#, #""1764000000000-65536""#, #""01-0""#, #""-1-0""#, "null", "1",
        #""17640000000000000-0""#, #""281474976710656-0""#, #""1-2-3""#, #""1\u0037-0""#, #""+1-0""#, #""1-""#,
        #""0-0""#, #""1-00""#,
    ]
    static let seqs = [
        "1", "0", "-0", "-1", "1.0", "1e0", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        #""1""#, "null", "2",
    ]
    static let extras = [#""extra":1"#, #""extra":{"a":[1,2,{"b":null}]}"#, #""protocolVersion":1"#, #""seq":1"#]

    static let slots: [(String, [String])] = [
        ("protocolVersion", protocolVersions), ("schemaVersion", schemaVersions), ("site", sites),
        ("table", tables), ("keyName", keyNames), ("keyValue", valueForms), ("op", ops), ("clock", clocks),
        ("changeSite", sites), ("seq", seqs), ("columnName", keyNames), ("columnValue", valueForms),
    ]

    /// A push whose slots `choose` fills from their forms; `random` decides the layout (white
    /// space, member order, and unless `ordinary`, extra and missing members, how `columns` is
    /// written).
    static func body(_ random: inout SeededGenerator, ordinary: Bool = false, choose: (String, [String]) -> String)
        -> String
    {
        func space() -> String { ["", "", "", " ", "\n\t", "\r\n "][Int(random.next() % 6)] }
        func object(_ members: [(String, String)]) -> String {
            var members = members
            if !ordinary, random.next() % 12 == 0 {
                members.append((extras[Int(random.next() % UInt64(extras.count))], ""))
            }
            if random.next() % 3 == 0 { members.shuffle(using: &random) }
            let text = members.map { name, value in
                value.isEmpty ? name : space() + name + space() + ":" + space() + value + space()
            }
            return "{" + space() + text.joined(separator: ",") + space() + "}"
        }
        func namedValues(_ name: String, _ value: String) -> String {
            var members = [(choose(name, keyNames), choose(value, valueForms))]
            if random.next() % 4 == 0 { members.append((choose(name, keyNames), choose(value, valueForms))) }
            return object(members)
        }
        func change() -> String {
            var members = [
                (#""table""#, choose("table", tables)), (#""key""#, namedValues("keyName", "keyValue")),
                (#""op""#, choose("op", ops)), (#""clock""#, choose("clock", clocks)),
                (#""site""#, choose("changeSite", sites)), (#""seq""#, choose("seq", seqs)),
            ]
            switch ordinary ? 5 : random.next() % 6 {
            case 0: break
            case 1: members.append((#""columns""#, "null"))
            case 2: members.append((#""columns""#, "{}"))
            default: members.append((#""columns""#, namedValues("columnName", "columnValue")))
            }
            if !ordinary, random.next() % 15 == 0 { members.removeFirst() }
            return object(members)
        }
        let changes = (0..<(1 + Int(random.next() % 3))).map { _ in change() }
        let body = object([
            (#""protocolVersion""#, choose("protocolVersion", protocolVersions)),
            (#""schemaVersion""#, choose("schemaVersion", schemaVersions)), (#""site""#, choose("site", sites)),
            (#""changes""#, "[" + space() + changes.joined(separator: ",") + space() + "]"),
        ])
        return space() + body + space()
    }
}
