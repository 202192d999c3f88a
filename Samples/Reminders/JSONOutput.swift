import Foundation
import OfflineStore

/// JSON text for rows, written by hand rather than with `JSONSerialization` so that the output
/// is exact and stable: keys sorted, INTEGER printed as the exact 64-bit integer, REAL as the
/// shortest text that reads back as the same double, strings escaped per RFC 8259.
///
/// See <https://www.rfc-editor.org/rfc/rfc8259>.
enum JSONOutput {
    /// An array of objects, one per row, pretty-printed with two-space indents.
    static func array(of objects: [[(key: String, value: DatabaseValue)]]) -> String {
        guard !objects.isEmpty else { return "[]" }
        let rendered = objects.map { members in
            let lines = members.sorted { $0.key < $1.key }.map { "    \(string($0.key)): \(value($0.value))" }
            return "  {\n" + lines.joined(separator: ",\n") + "\n  }"
        }
        return "[\n" + rendered.joined(separator: ",\n") + "\n]"
    }

    static func value(_ value: DatabaseValue) -> String {
        switch value {
        case .null:
            "null"
        case .integer(let integer):
            String(integer)
        case .real(let real):
            // JSON has no infinities (SQLite can store them; NaN it stores as NULL).
            real.isFinite ? real.description : "null"
        case .text(let text):
            string(text)
        case .blob(let data):
            // No reminders column holds a BLOB (STRICT tables); should one appear, base64 keeps it text.
            string(data.base64EncodedString())
        }
    }

    static func string(_ text: String) -> String {
        var escaped = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case "\u{08}": escaped += "\\b"
            case "\u{0C}": escaped += "\\f"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped + "\""
    }
}
