import Foundation
import OfflineStore

/// JSON written by hand where `JSONSerialization` cannot say what is meant: it prints the real
/// 1.0 as `1`, indistinguishable from the integer 1, and it cannot stream an array.
enum JSONText {
    /// The largest integer every JSON reader holds exactly (JavaScript's `Number.MAX_SAFE_INTEGER`).
    static let largestExactInteger: Int64 = (1 << 53) - 1

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func string(_ value: String) -> String {
        var escaped = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20: escaped += String(format: "\\u%04x", scalar.value)
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }

    /// A value keeping its storage class: NULL as `null`, an integer as a number without a
    /// fraction (outside ±(2^53 − 1) as `{"integer": "digits"}`), a real as a number with a
    /// fraction or exponent (infinities as `{"real": "inf"}` / `"-inf"`), text as a string, a blob
    /// as `{"blob": "base64"}`.
    static func value(_ value: DatabaseValue) -> String {
        switch value {
        case .null:
            return "null"
        case .integer(let integer):
            return (-largestExactInteger...largestExactInteger).contains(integer)
                ? String(integer) : #"{"integer": "\#(integer)"}"#
        case .real(let real):
            guard real.isFinite else { return #"{"real": "\#(real < 0 ? "-inf" : "inf")"}"# }
            // Swift writes the shortest text that reads back as the same double, always with a
            // fraction or an exponent ("1.0", "1e-05", "1e+20"): valid JSON, and never an integer.
            return real.description
        case .text(let text):
            return string(text)
        case .blob(let data):
            return #"{"blob": "\#(data.base64EncodedString())"}"#
        }
    }
}
