import Foundation
import Testing

@testable import SyncServer

/// Base64url (RFC 4648, section 5) as tokens and pull cursors carry it.
@Suite("Base64url")
struct Base64URLTests {
    /// Every length up to a few groups, against Foundation's base64 with the alphabet's two
    /// characters swapped and the padding dropped; and back.
    @Test func encodesAsRFC4648AndDecodesWhatItEncodes() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<40 {
            for _ in 0..<20 {
                let bytes = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
                let expected = bytes.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
                #expect(bytes.base64URLEncoded == expected)
                #expect(Data(base64URLEncoded: expected) == bytes)
                // Padded, as some encoders write it.
                let padded = expected + String(repeating: "=", count: (4 - expected.count % 4) % 4)
                #expect(Data(base64URLEncoded: padded) == bytes)
            }
        }
        #expect(Data([0xFB, 0xFF]).base64URLEncoded == "-_8")
    }

    @Test(arguments: ["A", "AAAAA", "ab+c", "ab/c", "ab c", "-_9", "-_8==", "AB===", "A=B", "é"])
    func refusesWhatIsNotBase64URL(_ text: String) {
        // "-_9" sets bits past its last byte; "-_8==" and "AB===" are padded past a group of four.
        #expect(Data(base64URLEncoded: text) == nil)
    }
}
