import Foundation
import SyncProtocol
import Testing

/// Error codes and their HTTP statuses are part of the wire contract: clients branch on them
/// (retry, stop, ask for an upgrade), so each is pinned here and in the README's table.
@Suite("Error codes")
struct ErrorCodeTests {
    /// The specification's table, written out independently of `ErrorCode.status`.
    static let specified: [String: (status: Int, retried: Bool)] = [
        "malformed_json": (400, false), "invalid_message": (400, false), "invalid_change": (400, false),
        "schema_violation": (400, false),
        "clock_out_of_range": (400, false), "too_many_changes": (400, false), "invalid_cursor": (400, false),
        "protocol_unsupported": (400, false), "unauthorized": (401, false), "forbidden": (403, false),
        "read_only_token": (403, false), "site_forbidden": (403, false), "out_of_scope": (403, false),
        "not_found": (404, false),
        "method_not_allowed": (405, false), "upgrade_required": (409, false), "schema_conflict": (409, false),
        "previous_push_missing": (409, false), "major_not_allowed": (409, false),
        "body_too_large": (413, false), "unsupported_media_type": (415, false),
        "unsupported_content_encoding": (415, false),
        "invalid_body_encoding": (400, false), "rate_limited": (429, true), "internal_error": (500, true),
        "too_many_waiting_pulls": (429, true),
        "unavailable": (503, true), "malformed_request": (400, false), "headers_too_large": (431, false),
        "uri_too_long": (414, false), "length_required": (411, false),
    ]

    @Test func everyCodeHasItsSpecifiedStatusAndRetryRule() {
        #expect(Set(ErrorCode.allCases.map(\.rawValue)) == Set(Self.specified.keys))
        for code in ErrorCode.allCases {
            let expected = Self.specified[code.rawValue]
            #expect(code.status == expected?.status, "\(code.rawValue)")
            #expect(code.isRetried == expected?.retried, "\(code.rawValue)")
            #expect(ErrorBody(code, "x").status == code.status)
        }
    }

    /// Only transient failures are retried; a 4xx other than 429 needs a change on the client.
    @Test func onlyRateLimitsAndServerFailuresAreRetried() {
        for code in ErrorCode.allCases {
            #expect(code.isRetried == (code.status == 429 || code.status >= 500), "\(code.rawValue)")
        }
    }

    @Test func codesAreSnakeCaseOnTheWire() throws {
        for code in ErrorCode.allCases {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0 == "_" }, "\(code.rawValue)")
            let body = try ProtocolJSON.encode(ErrorBody(code, "m"))
            #expect(String(decoding: body, as: UTF8.self) == #"{"error":{"code":"\#(code.rawValue)","message":"m"}}"#)
        }
    }

    @Test func optionalDetailsAreWrittenOnlyWhenPresent() throws {
        let change = try ProtocolJSON.encode(ErrorBody(.invalidChange, "change 3: …", changeIndex: 3))
        #expect(
            String(decoding: change, as: UTF8.self)
                == #"{"error":{"changeIndex":3,"code":"invalid_change","message":"change 3: …"}}"#)
        let upgrade = try ProtocolJSON.encode(ErrorBody(.upgradeRequired, "u", requiredMajorVersion: 2))
        #expect(
            String(decoding: upgrade, as: UTF8.self)
                == #"{"error":{"code":"upgrade_required","message":"u","requiredMajorVersion":2}}"#)
    }

    /// A client meeting a code it does not know (from a newer server) gets invalid_message rather
    /// than a crash; the status still tells it what class of error it is.
    @Test func anUnknownCodeIsAnInvalidMessage() {
        let body = #"{"error":{"code":"brand_new","message":"m"}}"#
        #expect(
            errorCode { _ = try ProtocolJSON.decode(ErrorBody.self, from: Data(body.utf8), limits: .standard) }
                == .invalidMessage)
    }

    /// The README's error table lists every code with its status, so the specification cannot
    /// lose or misstate one.
    @Test func theReadmeTableListsEveryCodeWithItsStatus() throws {
        let readme = try ProtocolFiles.text("README.md")
        for code in ErrorCode.allCases {
            let row = try Regex("\\| `\(code.rawValue)` \\| \(code.status) \\|")
            let listed = readme.contains(row)
            #expect(listed, "no row `| `\(code.rawValue)` | \(code.status) |` in Protocol/README.md")
        }
    }
}
