import Foundation
import SyncProtocol
import Testing

/// The three small text forms of the protocol: clocks, site ids and schema versions. Each has one
/// canonical text, and its order is the one last-writer-wins and negotiation rely on.
@Suite("Clocks, site ids and schema versions")
struct ClockSiteVersionTests {
    @Test func clockBoundsAreTwoToTheFortyEightAndTwoToTheSixteen() throws {
        #expect(ChangeClock("281474976710655-65535") != nil)
        #expect(ChangeClock("281474976710656-0") == nil)
        #expect(ChangeClock("0-65536") == nil)
        #expect(ChangeClock("0-0") != nil)
        #expect(ChangeClock(milliseconds: -1, counter: 0) == nil)
        #expect(ChangeClock(milliseconds: 0, counter: -1) == nil)
    }

    /// The store's readings are this type too: its first reading, and the non-optional path the
    /// hybrid logical clock takes for parts it keeps in range.
    @Test func theZeroClockAndInRangePartsNeedNoUnwrapping() {
        #expect(ChangeClock.zero == ChangeClock("0-0"))
        #expect(ChangeClock.zero.packed == 0)
        let last = ChangeClock(validMilliseconds: ChangeClock.maximumMilliseconds, counter: ChangeClock.maximumCounter)
        #expect(last == ChangeClock("281474976710655-65535"))
    }

    /// Section 7.2's counter rule: a full counter moves to the next millisecond with counter 0, and
    /// the range's last reading stays where it is.
    @Test func theSuccessorOfAFullCounterIsTheNextMillisecondWithCounterZero() {
        #expect(ChangeClock("10-3")!.successor == ChangeClock("10-4")!)
        #expect(ChangeClock("10-65534")!.successor == ChangeClock("10-65535")!)
        #expect(ChangeClock("10-65535")!.successor == ChangeClock("11-0")!)
        #expect(ChangeClock("281474976710654-65535")!.successor == ChangeClock("281474976710655-0")!)
        #expect(ChangeClock("281474976710655-65535")!.successor == ChangeClock("281474976710655-65535")!)
    }

    /// The packed form is an unsigned 64-bit number; kept in a signed one (SQLite's INTEGER) it is
    /// ordered and invertible while milliseconds stay below 2^47, the year 6429.
    @Test func packedClocksAreNonNegativeAndOrderedBelowTwoToTheFortySevenMilliseconds() throws {
        let lastSigned = try #require(ChangeClock(milliseconds: (1 << 47) - 1, counter: ChangeClock.maximumCounter))
        #expect(lastSigned.packed == .max)
        #expect(ChangeClock(packed: .max) == lastSigned)
        let firstNegative = try #require(ChangeClock(milliseconds: 1 << 47, counter: 0))
        #expect(firstNegative.packed == .min)
        #expect(ChangeClock(packed: .min) == nil)
        let largest = try #require(
            ChangeClock(milliseconds: ChangeClock.maximumMilliseconds, counter: ChangeClock.maximumCounter))
        #expect(UInt64(bitPattern: largest.packed) == .max)
        // Order never depends on the packed form's sign.
        #expect(lastSigned < firstNegative && firstNegative < largest)
        #expect(try #require(ChangeClock("1-0")) < largest)
    }

    @Test(arguments: [
        "", "-", "1", "1-", "-1", "1-0-0", "-1-0", "+1-0", "1-+0", " 1-0", "1-0 ", "1 -0", "01-0", "1-00", "00-0",
        "1.0-0", "1e3-0", "0x10-0", "١-0", "1764000000000-3\n",
    ])
    func clockTextIsRefused(_ text: String) {
        #expect(ChangeClock(text) == nil)
        #expect(throws: ErrorBody.self) {
            try ProtocolJSON.decode(ChangeClock.self, from: Data("\"\(text)\"".utf8), limits: .standard)
        }
    }

    @Test func clocksOrderByMillisecondsThenCounterAndPackedOrderIsTheSame() throws {
        let readings = try [
            "0-0", "0-1", "0-65535", "1-0", "1-2", "1764000000000-0", "1764000000000-3", "1764000000001-0",
            "281474976710655-65535",
        ].map { try #require(ChangeClock($0)) }
        for (earlier, later) in zip(readings, readings.dropFirst()) {
            #expect(earlier < later)
            #expect(UInt64(bitPattern: earlier.packed) < UInt64(bitPattern: later.packed))
        }
        for reading in readings {
            #expect(ChangeClock(reading.description) == reading)
            #expect(UInt64(bitPattern: reading.packed) == UInt64(reading.milliseconds) << 16 | UInt64(reading.counter))
            if reading.milliseconds < 1 << 47 { #expect(ChangeClock(packed: reading.packed) == reading) }
        }
    }

    @Test func siteIdsAreReadInEitherCaseAndWrittenLowercase() throws {
        let upper = try #require(SiteID(hex: "9A0C6C1E5B2F4D7A8E3B1C0D2F4A6B8C"))
        let lower = try #require(SiteID(hex: "9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c"))
        #expect(upper == lower)
        #expect(upper.description == "9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c")
        #expect(
            String(decoding: try ProtocolJSON.encode([upper]), as: UTF8.self)
                == #"["9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c"]"#)
        #expect(upper.bytes.count == 16)
        #expect(SiteID(bytes: Data(count: 15)) == nil)
        #expect(SiteID(bytes: Data(count: 17)) == nil)
    }

    @Test(arguments: [
        "", "9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8", "9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c0",
        "9a0c6c1e-5b2f-4d7a-8e3b-1c0d2f4a6b8c",
        "ga0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c", "0x0c6c1e5b2f4d7a8e3b1c0d2f4a6b8c", " 9a0c6c1e5b2f4d7a8e3b1c0d2f4a6b8",
    ])
    func siteIdTextIsRefused(_ text: String) {
        #expect(SiteID(hex: text) == nil)
    }

    /// Equal clocks are ordered by the site id's bytes, so comparing the hex texts (lowercase)
    /// gives the same order as comparing the bytes.
    @Test func siteIdsOrderByTheirBytes() throws {
        let sites = try [
            "00000000000000000000000000000000", "000000000000000000000000000000ff", "0100000000000000000000000000000a",
            "7f000000000000000000000000000000", "80000000000000000000000000000000", "ffffffffffffffffffffffffffffffff",
        ].map { try #require(SiteID(hex: $0)) }
        for (lower, higher) in zip(sites, sites.dropFirst()) {
            #expect(lower < higher)
            #expect(lower.description < higher.description)
        }
    }

    @Test func schemaVersionsParseCanonicalTextOnly() {
        // Through the parser: a bare literal argument would be the literal initialiser.
        let parsed = ["1.1.0", "0.0.0", "999999999.0.10"].map { SchemaVersion($0) }
        #expect(parsed == [SchemaVersion(1, 1, 0), SchemaVersion(0, 0, 0), SchemaVersion(999_999_999, 0, 10)])
        for text in [
            "", "1", "1.1", "1.1.0.0", "01.1.0", "1.01.0", "1.1.00", "v1.1.0", "1.1.0-beta", "1.-1.0", "+1.1.0",
            "1..0", "1000000000.0.0", " 1.1.0", "1.1.0 ",
        ] {
            #expect(SchemaVersion(text) == nil, "\(text)")
        }
    }

    @Test func schemaVersionsOrderByMajorMinorPatch() {
        let versions = [
            SchemaVersion(0, 9, 9), SchemaVersion(1, 0, 0), SchemaVersion(1, 0, 1), SchemaVersion(1, 2, 0),
            SchemaVersion(1, 10, 0), SchemaVersion(2, 0, 0),
        ]
        for (earlier, later) in zip(versions, versions.dropFirst()) { #expect(earlier < later) }
        // Not text order: "1.10.0" sorts before "1.2.0" as text.
        #expect(SchemaVersion("1.10.0") > SchemaVersion("1.2.0"))
    }

    /// What a schema declares is a literal of this type (`Schema.Version` in the store).
    @Test func schemaVersionLiteralsAndJSONUseTheCanonicalText() throws {
        let literal: SchemaVersion = "1.10.0"
        #expect(literal == SchemaVersion(1, 10, 0))
        let json = try JSONEncoder().encode(literal)
        #expect(String(decoding: json, as: UTF8.self) == "\"1.10.0\"")
        #expect(try JSONDecoder().decode(SchemaVersion.self, from: json) == literal)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(SchemaVersion.self, from: Data("\"1.1\"".utf8)) }
    }
}
