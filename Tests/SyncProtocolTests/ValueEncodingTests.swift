import Foundation
import SyncProtocol
import TestSupport
import Testing

/// The value encoding must carry all five SQLite storage classes exactly (64-bit integers,
/// negative zero, infinities, any bytes) and give each value one text, so the cases of
/// `Protocol/vectors/values.json` are checked both ways, and random values are round-tripped.
@Suite("Value encoding")
struct ValueEncodingTests {
    @Test func valueCasesLoadAndCoverEveryStorageClass() throws {
        let cases = try ValueCase.load()
        #expect(cases.count >= 80)
        #expect(Set(cases.filter(\.valid).compactMap(\.storageClass)) == ["null", "integer", "real", "text", "blob"])
        #expect(cases.contains { !$0.valid })
        #expect(Set(cases.map(\.name)).count == cases.count, "case names are unique")
    }

    @Test(arguments: ValueCase.all)
    func valueCaseDecodesAsListed(_ valueCase: ValueCase) throws {
        let decoded = Result { () throws(ErrorBody) in
            try ProtocolJSON.decode(WireValue.self, from: Data(valueCase.json.utf8), limits: .standard)
        }
        guard valueCase.valid else {
            #expect(throws: ErrorBody.self) { try decoded.get() }
            return
        }
        let value = try decoded.get()
        #expect(storageClass(of: value) == valueCase.storageClass)
        #expect(String(decoding: try ProtocolJSON.encode(value), as: UTF8.self) == valueCase.canonical)
        // The canonical text reads back as the same value (a second round trip changes nothing).
        let again = try ProtocolJSON.decode(
            WireValue.self, from: Data(try #require(valueCase.canonical).utf8), limits: .standard)
        #expect(again == value)
        #expect(sign(of: again) == sign(of: value))
    }

    @Test func negativeZeroKeepsItsSign() throws {
        let encoded = try ProtocolJSON.encode(WireValue.real(-0.0))
        #expect(String(decoding: encoded, as: UTF8.self) == #"{"real":-0}"#)
        let decoded = try ProtocolJSON.decode(WireValue.self, from: encoded, limits: .standard)
        guard case .real(let real) = decoded else {
            Issue.record("decoded \(decoded)")
            return
        }
        #expect(real == 0 && real.sign == .minus)
    }

    @Test func notANumberCannotBeEncoded() {
        #expect(throws: EncodingError.self) { try ProtocolJSON.encode(WireValue.real(.nan)) }
        #expect(throws: EncodingError.self) { try ProtocolJSON.encode(WireValue.real(-.signalingNaN)) }
    }

    /// The reference reader refuses a non-zero literal that rounds to zero (Foundation's
    /// behaviour); the specification lets other readers accept it, so it is not in values.json.
    @Test func realUnderflowingToZeroIsRefusedByTheReferenceReader() {
        #expect(throws: ErrorBody.self) {
            try ProtocolJSON.decode(WireValue.self, from: Data(#"{"real":1e-400}"#.utf8), limits: .standard)
        }
    }

    /// Every Int64, however far past 2^53, survives: the decimal string is exact.
    @Test func randomIntegersRoundTrip() throws {
        var random = SeededGenerator(seed: 0x5eed)
        let edges: [Int64] = [.min, .min + 1, -1, 0, 1, .max - 1, .max, 1 << 53, (1 << 53) + 1, -(1 << 53) - 1]
        for integer in edges + (0..<2_000).map({ _ in Int64(bitPattern: random.next()) }) {
            try expectRoundTrip(.integer(integer))
        }
    }

    /// Every finite double and both infinities survive bit for bit, whatever the bit pattern
    /// (subnormals, negative zero, extremes); NaN patterns are skipped, having no encoding.
    @Test func randomRealsRoundTripBitForBit() throws {
        var random = SeededGenerator(seed: 0xdb1)
        let edges: [Double] = [
            0, -0.0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .infinity, -.infinity, 0.1, 1e16, Double((Int64(1) << 53) + 1),
        ]
        for real in edges + (0..<2_000).map({ _ in Double(bitPattern: random.next()) }) where !real.isNaN {
            let decoded = try roundTrip(.real(real))
            guard case .real(let back) = decoded else {
                Issue.record("\(real) came back as \(decoded)")
                continue
            }
            #expect(back.bitPattern == real.bitPattern, "\(real)")
        }
    }

    @Test func randomTextRoundTrips() throws {
        var random = SeededGenerator(seed: 0x7e47)
        // Control characters, quotes, backslashes, slashes, ASCII, Latin, CJK and astral scalars.
        let ranges: [ClosedRange<UInt32>] = [0...0x1F, 0x20...0x7F, 0x80...0x7FF, 0x3000...0x9FFF, 0x1F300...0x1FAFF]
        for _ in 0..<500 {
            var text = ""
            for _ in 0..<Int(random.next() % 24) {
                let range = ranges[Int(random.next() % UInt64(ranges.count))]
                let scalar = range.lowerBound + UInt32(random.next() % UInt64(range.count))
                text.unicodeScalars.append(Unicode.Scalar(scalar)!)
            }
            try expectRoundTrip(.text(text))
        }
    }

    @Test func randomBlobsRoundTrip() throws {
        var random = SeededGenerator(seed: 0xb10b)
        for length in 0..<200 {
            let bytes = Data((0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            try expectRoundTrip(.blob(bytes))
        }
    }

    /// One integer has one text: a sign other than a lone leading '-', or a leading zero, is
    /// refused even though the number it spells is in range.
    @Test func integersHaveOneTextOnly() throws {
        var random = SeededGenerator(seed: 0x1)
        for _ in 0..<500 {
            let integer = Int64(bitPattern: random.next()) >> (random.next() % 64)
            let text = String(integer)
            #expect(decodes(#"{"integer":"\#(text)"}"#))
            let magnitude = integer < 0 ? String(text.dropFirst()) : text
            let sign = integer < 0 ? "-" : ""
            #expect(!decodes(#"{"integer":"\#(sign)0\#(magnitude)"}"#), "leading zero before \(text)")
            if integer >= 0 { #expect(!decodes(#"{"integer":"+\#(text)"}"#)) }
            #expect(!decodes(#"{"integer":"\#(text).0"}"#))
        }
    }

    private func decodes(_ json: String) -> Bool {
        (try? ProtocolJSON.decode(WireValue.self, from: Data(json.utf8), limits: .standard)) != nil
    }

    private func roundTrip(_ value: WireValue) throws -> WireValue {
        try ProtocolJSON.decode(WireValue.self, from: try ProtocolJSON.encode(value), limits: .standard)
    }

    private func expectRoundTrip(_ value: WireValue) throws {
        #expect(try roundTrip(value) == value)
    }

    private func storageClass(of value: WireValue) -> String {
        switch value {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        }
    }

    private func sign(of value: WireValue) -> FloatingPointSign? {
        if case .real(let real) = value { real.sign } else { nil }
    }
}
