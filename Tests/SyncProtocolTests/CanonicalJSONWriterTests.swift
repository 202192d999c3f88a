import Foundation
import SyncProtocol
import TestSupport
import Testing

/// The server stores each pushed change as ``CanonicalJSONWriter`` writes it and pulls send those
/// bytes verbatim, so they must be exactly what `ProtocolJSON.encode` (Foundation's encoder)
/// writes: checked over every change of the vectors and over random changes built to hit each
/// escape, number form and key order.
@Suite("Canonical JSON writer")
struct CanonicalJSONWriterTests {
    @Test func everyChangeOfTheVectorsIsWrittenAsTheEncoderWritesIt() throws {
        var changes: [Change] = []
        for name in ProtocolFiles.messageVectorFileNames {
            let data = try ProtocolFiles.data("vectors/\(name)")
            if name.hasPrefix("push-request.") {
                changes += try ProtocolJSON.decode(PushRequest.self, from: data, limits: .standard).changes
            } else if name.hasPrefix("pull-response.") {
                changes += try ProtocolJSON.decode(PullResponse.self, from: data, limits: .standard).changes
            }
        }
        #expect(changes.count >= 5)
        for change in changes { try expectSameBytes(change) }
    }

    @Test func randomChangesAreWrittenAsTheEncoderWritesThem() throws {
        var random = SeededGenerator(seed: 0xca11)
        for _ in 0..<3_000 { try expectSameBytes(RandomChanges.change(&random)) }
    }

    @Test func pullPagesAreWrittenAsTheEncoderWritesThem() throws {
        try expectSameBytes(vectors: "pull-response.", atLeast: 2, seed: 0x9a6e) { random in
            PullResponse(
                changes: (0..<Int(random.next() % 6)).map { _ in RandomChanges.change(&random) },
                cursor: RandomChanges.text(&random), hasMore: random.next() % 2 == 0,
                phase: random.next() % 2 == 0 ? .snapshot : .log,
                remaining: Int64(bitPattern: random.next()) >> (random.next() % 64))
        } write: {
            try $0.write($1)
        }
    }

    @Test func pushesAreWrittenAsTheEncoderWritesThem() throws {
        try expectSameBytes(vectors: "push-request.", atLeast: 1, seed: 0x9054) { random in
            PushRequest(
                protocolVersion: Int(Int32(truncatingIfNeeded: random.next())),
                schemaVersion: SchemaVersion(
                    Int(random.next() % 1_000_000_000), Int(random.next() % 12), Int(random.next() % 3)),
                site: SiteID(bytes: Data((0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }))!,
                changes: (0..<Int(random.next() % 6)).map { _ in RandomChanges.change(&random) })
        } write: {
            try $0.write($1)
        }
    }

    /// Whole doubles below 2^53 are written as integers without formatting the double: up to
    /// the bound and past it, each must be what the encoder writes.
    @Test func wholeRealsAreWrittenAsTheEncoderWritesThem() throws {
        var random = SeededGenerator(seed: 0x2053)
        var reals: [Double] = [
            1, -1, 1e15, 1e15 - 1, 1e16, 9_007_199_254_740_991, 9_007_199_254_740_992, -9_007_199_254_740_991,
        ]
        reals += [9_007_199_254_740_994, 4_503_599_627_370_496, 4_503_599_627_370_495.5, 1_700_000_000, 0.5, -0.0, 0]
        for _ in 0..<2_000 {
            let whole = Double(Int64(bitPattern: random.next()) >> (random.next() % 64))
            reals += [whole, whole + 0.5, whole.nextUp, whole.nextDown]
        }
        for real in reals where real.isFinite {
            var writer = CanonicalJSONWriter()
            try writer.write(WireValue.real(real))
            #expect(writer.text == String(decoding: try ProtocolJSON.encode(WireValue.real(real)), as: UTF8.self))
        }
    }

    /// Strings are scanned eight bytes at a time: a character to escape at every place of a long
    /// string, and next to non-ASCII bytes, must be escaped as the encoder escapes it.
    @Test func escapesAtEveryPlaceOfALongStringAreWrittenAsTheEncoderWritesThem() throws {
        let plain = Array("abcdefghijklmnopqrstuvwxyzé€0123456789".unicodeScalars)
        for special in ["\"", "\\", "\n", "\u{0}", "\u{1F}", "/", "\u{7F}"] {
            for place in 0...plain.count {
                var text = String(String.UnicodeScalarView(plain))
                text.insert(contentsOf: special, at: text.unicodeScalars.index(text.startIndex, offsetBy: place))
                var writer = CanonicalJSONWriter()
                try writer.write(WireValue.text(text))
                #expect(writer.text == String(decoding: try ProtocolJSON.encode(WireValue.text(text)), as: UTF8.self))
            }
        }
    }

    /// A writer's bytes are shared by its copies until one of them writes: the other keeps what
    /// it had.
    @Test func aCopyOfAWriterKeepsItsBytesWhenTheOtherWritesOn() throws {
        var first = CanonicalJSONWriter(capacity: 16)
        try first.write(WireValue.integer(1))
        var second = first
        try second.write(WireValue.text("second"))
        try first.write(WireValue.null)
        let copy = first
        try first.write(WireValue.integer(2))
        #expect(second.text == #"{"integer":"1"}{"text":"second"}"#)
        #expect(first.text == #"{"integer":"1"}{"null":true}{"integer":"2"}"#)
        #expect(copy.text == #"{"integer":"1"}{"null":true}"#)
        #expect(first.data == Data(first.bytes))
    }

    /// What a batch cuts its texts by (the server's `BatchJSON`): the count and the bytes in
    /// place are those written so far, after growing past the first allocation too.
    @Test func theCountAndTheBytesInPlaceAreWhatWasWritten() throws {
        var writer = CanonicalJSONWriter(capacity: 16)
        var ends: [Int] = []
        for number in 0..<40 {
            try writer.write(WireValue.text(String(repeating: "x", count: number)))
            ends.append(writer.byteCount)
        }
        #expect(ends.last == writer.bytes.count)
        #expect(writer.withUnsafeBytes { Array($0) } == writer.bytes)
        let texts = writer.withUnsafeBytes { bytes in
            zip([0] + ends.dropLast(), ends).map {
                String(decoding: UnsafeBufferPointer(rebasing: bytes[$0..<$1]), as: UTF8.self)
            }
        }
        #expect(texts.count == 40)
        #expect(texts[3] == #"{"text":"xxx"}"#)
    }

    @Test func notANumberIsRefusedAsTheEncoderRefusesIt() {
        var writer = CanonicalJSONWriter()
        #expect(throws: EncodingError.self) { try writer.write(WireValue.real(.nan)) }
        #expect(throws: EncodingError.self) { try ProtocolJSON.encode(WireValue.real(.nan)) }
    }

    /// The messages of the vector files whose names start with `prefix` (at least `minimum` of
    /// them) and 200 random ones: each, as `write` has the writer write it, is what the encoder writes.
    private func expectSameBytes<Message: Codable>(
        vectors prefix: String, atLeast minimum: Int, seed: UInt64, random make: (inout SeededGenerator) -> Message,
        write: (inout CanonicalJSONWriter, Message) throws -> Void
    ) throws {
        var messages = try ProtocolFiles.messageVectorFileNames.filter { $0.hasPrefix(prefix) }.map { name in
            try ProtocolJSON.decode(Message.self, from: ProtocolFiles.data("vectors/\(name)"), limits: .standard)
        }
        #expect(messages.count >= minimum)
        var random = SeededGenerator(seed: seed)
        for _ in 0..<200 { messages.append(make(&random)) }
        for message in messages {
            var writer = CanonicalJSONWriter()
            try write(&writer, message)
            #expect(writer.text == String(decoding: try ProtocolJSON.encode(message), as: UTF8.self))
        }
    }

    private func expectSameBytes(_ change: Change) throws {
        let expected = String(decoding: try ProtocolJSON.encode(change), as: UTF8.self)
        #expect(try change.canonicalJSON() == expected)
        #expect(try change.canonicalKeyJSON() == String(decoding: try ProtocolJSON.encode(change.key), as: UTF8.self))
    }
}

/// Random changes for the writer and reader tests: names that sort differently by bytes, by case
/// and by number; text with control characters, quotes, backslashes, slashes and astral scalars;
/// integers and doubles across their range (subnormals, negative zero, infinities, exponents).
enum RandomChanges {
    static let names = ["id", "ID", "a10", "a9", "_x", "Z", "title", "é", "a\"b", "tab\t", "x/y", "zz"]
    /// Names a client writes without escapes.
    static let plainNames = names.filter { !$0.contains("\"") && !$0.contains("\t") }

    static func change(_ random: inout SeededGenerator, names: [String] = names) -> Change {
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        var key: [String: WireValue] = [:]
        for _ in 0..<(1 + Int(random.next() % 2)) { key[pick(names)] = value(&random) }
        var columns: [String: WireValue] = [:]
        for _ in 0..<Int(random.next() % 6) { columns[pick(names)] = value(&random) }
        return Change(
            table: pick(["items", "reminders", text(&random)]), key: key, op: pick(Change.Operation.allCases),
            columns: columns,
            clock: ChangeClock(
                milliseconds: Int64(random.next() % UInt64(ChangeClock.maximumMilliseconds + 1)),
                counter: Int64(random.next() % UInt64(ChangeClock.maximumCounter + 1)))!,
            site: SiteID(bytes: Data((0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }))!,
            seq: Int64(bitPattern: random.next()) >> (random.next() % 64))
    }

    static func value(_ random: inout SeededGenerator) -> WireValue {
        switch random.next() % 8 {
        case 0: return .null
        case 1: return .integer(Int64(bitPattern: random.next()) >> (random.next() % 64))
        case 2:
            let real = Double(bitPattern: random.next())
            return .real(real.isNaN ? 0.5 : real)
        case 3:
            let edges: [Double] = [
                0, -0.0, 1, -1, 100, 0.1, 1e-5, 1e16, 1e20, 123.456, .infinity, -.infinity,
                .leastNonzeroMagnitude, .greatestFiniteMagnitude, Double(Int64(random.next() % 1_000_000)),
            ]
            return .real(edges[Int(random.next() % UInt64(edges.count))])
        case 4: return .blob(Data((0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
        default: return .text(text(&random))
        }
    }

    static func text(_ random: inout SeededGenerator) -> String {
        let ranges: [ClosedRange<UInt32>] = [
            0...0x1F, 0x20...0x7F, 0x20...0x7F, 0x80...0x7FF, 0x3000...0x9FFF, 0x1F300...0x1FAFF,
        ]
        var text = ""
        for _ in 0..<Int(random.next() % 24) {
            let range = ranges[Int(random.next() % UInt64(ranges.count))]
            text.unicodeScalars.append(Unicode.Scalar(range.lowerBound + UInt32(random.next() % UInt64(range.count)))!)
        }
        return text
    }
}
