import Foundation
import SyncProtocol
import Testing

@testable import SyncClient

/// The engine reads pull pages with ``MessageReader/readPullPage(_:)`` and falls back to `JSONDecoder` when it
/// gives up: whatever it accepts must decode to exactly what `JSONDecoder` gives, and what
/// `JSONDecoder` refuses it must not accept.
@Suite struct PullPageReaderTests {
    static let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Protocol/vectors")

    @Test(arguments: [
        "pull-response.snapshot.json", "pull-response.log.json", "pull-response.caught-up.json",
        "pull-response.scoped.json",
    ])
    func readsTheProtocolVectorsAsJSONDecoderDoes(_ name: String) throws {
        let body = try Data(contentsOf: Self.vectors.appendingPathComponent(name))
        let expected = try JSONDecoder().decode(PullResponse.self, from: body)
        #expect(MessageReader.readPullPage(body) == expected)
    }

    @Test func readsEveryKindOfValueAsJSONDecoderDoes() throws {
        let body = Data(
            #"""
             { "phase" : "log", "remaining": 12, "future": {"a": [1, 2.5e3, "x", null, true, {}]},
              "changes": [
                {"table": "t", "key": {"id": {"text": "k1"}}, "op": "insert", "seq": 7,
                 "clock": "1764000000000-65535", "site": "9A0C6C1E5B2F4D7A8E3B1C0D2F4A6B8C", "extra": [],
                 "columns": {"min": {"integer": "-9223372036854775808"}, "max": {"integer": "9223372036854775807"},
                   "zero": {"integer": "0"}, "r": {"real": -0.0}, "r2": {"real": 1.7976931348623157e308},
                   "r3": {"real": 5}, "inf": {"real": "Infinity"}, "ninf": {"real": "-Infinity"},
                   "n": {"null": true}, "b": {"blob": "AAEC/w=="}, "e": {"blob": ""},
                   "s": {"text": "q\"b\\s/\b\f\n\r\t \u00e9\ud83d\ude00 é 😀 \u0000"}, "empty": {"text": ""}}},
                {"table": "t", "key": {"id": {"blob": "AQ=="}, "n": {"integer": "2"}}, "op": "delete", "seq": 8,
                 "clock": "0-0", "site": "00000000000000000000000000000000"}
              ], "cursor": "c/1", "hasMore": false }
            """#.utf8)
        let expected = try JSONDecoder().decode(PullResponse.self, from: body)
        let read = try #require(MessageReader.readPullPage(body))
        #expect(read == expected)
        #expect(read.changes[0].columns["s"] == .text("q\"b\\s/\u{8}\u{c}\n\r\t é😀 é 😀 \u{0}"))
        #expect(read.changes[1].columns.isEmpty)
    }

    /// Each of these is refused by `JSONDecoder` (the engine's error) or outside what the reader
    /// vouches for; the reader must leave all of them to `JSONDecoder`.
    @Test(arguments: [
        #"{"integer":"01"}"#, #"{"integer":"-0"}"#, #"{"integer":"+1"}"#, #"{"integer":"9223372036854775808"}"#,
        #"{"integer":1}"#, #"{"real":1e400}"#, #"{"real":"NaN"}"#, #"{"real":01}"#, #"{"blob":"AB=="}"#,
        #"{"blob":"AAE"}"#, #"{"null":false}"#, #"{"text":"a","real":1}"#, "{}",
        #"{"text":null}"#, #"{"text":"\ud800"}"#, #"{"text":"\x"}"#, "{\"text\":\"a\u{1}\"}", #"{"date":"x"}"#,
    ])
    func leavesWhatItDoesNotVouchForToJSONDecoder(_ value: String) {
        let body = Data(
            (#"{"changes":[{"table":"t","key":{"id":{"text":"k"}},"op":"insert","seq":1,"clock":"1-0","#
                + #""site":"00000000000000000000000000000000","columns":{"c":"# + value
                + #"}}],"cursor":"c","hasMore":false,"phase":"log","remaining":0}"#).utf8)
        #expect(MessageReader.readPullPage(body) == nil)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(PullResponse.self, from: body) }
    }

    /// `JSONDecoder` reads a repeated member (to one of its values); the reader leaves the
    /// choice to it.
    @Test func leavesRepeatedMembersToJSONDecoder() {
        let body = Data(
            (#"{"changes":[{"table":"t","key":{"id":{"text":"k"}},"op":"insert","seq":1,"clock":"1-0","#
                + #""site":"00000000000000000000000000000000","columns":{"c":{"text":"a","text":"b"}}}],"#
                + #""cursor":"c","hasMore":false,"phase":"log","remaining":0}"#).utf8)
        #expect(MessageReader.readPullPage(body) == nil)
    }

    @Test(arguments: [
        "", "[]", #"{"changes":[],"cursor":"c","hasMore":false,"phase":"log"}"#,
        #"{"changes":[],"cursor":"c","hasMore":false,"phase":"log","remaining":0} x"#,
        #"{"changes":[],"cursor":"c","hasMore":false,"phase":"later","remaining":0}"#,
        #"{"changes":[],"cursor":"c","hasMore":0,"phase":"log","remaining":0}"#,
        #"{"changes":[],"cursor":"c","hasMore":false,"phase":"log","remaining":1.5}"#,
        #"{"changes":[{"table":"t","key":{},"op":"insert","seq":1,"clock":"01-0","site":"00000000000000000000000000000000"}],"cursor":"c","hasMore":false,"phase":"log","remaining":0}"#,
        #"{"changes":[{"table":"t","key":{},"op":"insert","seq":1,"clock":"1-0","site":"0000"}],"cursor":"c","hasMore":false,"phase":"log","remaining":0}"#,
        #"{"changes":[{"table":"t","key":{},"op":"upsert","seq":1,"clock":"1-0","site":"00000000000000000000000000000000"}],"cursor":"c","hasMore":false,"phase":"log","remaining":0}"#,
    ])
    func leavesMalformedPagesToJSONDecoder(_ text: String) {
        let body = Data(text.utf8)
        #expect(MessageReader.readPullPage(body) == nil)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(PullResponse.self, from: body) }
    }
}
