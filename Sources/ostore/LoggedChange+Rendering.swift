import Foundation
import OfflineStore

/// How `ostore log` prints an entry: one text line, or one JSON object.
extension LoggedChange {
    /// `SEQ SITE CLOCK TABLE OPERATION KEY`: `-` for the sequence of a change from another site,
    /// the operation with the changed column for an update (`update(title)`), the key last (it may
    /// hold spaces) as SQL literals, in parentheses when it has several columns.
    var textLine: String {
        let operationText =
            columns.isEmpty ? operation.rawValue : "\(operation.rawValue)(\(columns.joined(separator: ",")))"
        let keyText =
            key.count == 1 ? Self.sqlLiteral(key[0]) : "(" + key.map(Self.sqlLiteral).joined(separator: ", ") + ")"
        return [sequence.map(String.init) ?? "-", site, clock.description, table, operationText, keyText]
            .joined(separator: " ")
    }

    /// The entry as one line of JSON; see ``JSONText/value(_:)`` for the key values.
    var jsonObject: String {
        let fields = [
            ("seq", sequence.map(String.init) ?? "null"),
            ("site", JSONText.string(site)),
            ("clock", JSONText.string(clock.description)),
            ("table", JSONText.string(table)),
            ("key", "[" + key.map(JSONText.value).joined(separator: ", ") + "]"),
            ("op", JSONText.string(operation.rawValue)),
            ("columns", "[" + columns.map(JSONText.string).joined(separator: ", ") + "]"),
            ("pending", isPending ? "true" : "false"),
        ]
        return "{" + fields.map { "\(JSONText.string($0.0)): \($0.1)" }.joined(separator: ", ") + "}"
    }

    /// A value as SQLite's `quote()` would write it, except that control characters in text are
    /// written as `char(N)` pieces so every entry stays on one line and the literal still means
    /// the same value.
    static func sqlLiteral(_ value: DatabaseValue) -> String {
        switch value {
        case .null:
            return "NULL"
        case .integer(let integer):
            return String(integer)
        case .real(let real):
            return real.isFinite ? real.description : (real < 0 ? "-9e999" : "9e999")
        case .blob(let data):
            return "X'" + data.map { String(format: "%02X", $0) }.joined() + "'"
        case .text(let text):
            var literal = "'"
            for scalar in text.unicodeScalars {
                if scalar == "'" {
                    literal += "''"
                } else if scalar.value < 0x20 || scalar.value == 0x7F {
                    literal += "'||char(\(scalar.value))||'"
                } else {
                    literal.unicodeScalars.append(scalar)
                }
            }
            return literal + "'"
        }
    }
}
