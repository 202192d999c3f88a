import Foundation
import OfflineStoreMigrations
import OfflineStoreSQLite

/// Decodes the key of a log entry back into values: a one-column key is stored as itself; a
/// composite key as the `quote()` SQL literal of each column joined by commas, read back here by
/// a literal parser (the text is data and is never run as SQL).
enum LoggedKey {
    static func values(_ stored: DatabaseValue, columnCount: Int) throws -> [DatabaseValue] {
        guard columnCount > 1 else { return [stored] }
        guard case .text(let text) = stored, let values = literals(text), values.count == columnCount else {
            throw malformed(stored)
        }
        return values
    }

    /// The key when its column count is unknown (its table is gone from the file): a text that is
    /// exactly what `quote()` writes for two or more values joined by commas is taken as a composite
    /// key, anything else as a one-column key. Only a one-column text key that is itself such a list
    /// (`'a','b'`) is misread.
    static func values(guessing stored: DatabaseValue) -> [DatabaseValue] {
        guard case .text(let text) = stored, let values = literals(text), values.count > 1,
            // Written back the way quote() writes them (reals aside, whose rendering differs), the
            // values must give the text itself, so loose text such as `1, 2` stays one value.
            !values.contains(where: { $0.storageClass == .real }),
            values.map(\.sqlLiteralDescription).joined(separator: ",") == text
        else { return [stored] }
        return values
    }

    /// The values of a comma-separated list of SQL literals as `quote()` writes them; nil when the
    /// text is anything else.
    private static func literals(_ text: String) -> [DatabaseValue]? {
        var values: [DatabaseValue] = []
        var negative = false
        for token in SQLScanner.tokens(text) {
            switch token.kind {
            case .punctuation where token.text == ",":
                continue
            case .punctuation where token.text == "-":
                negative = true
                continue
            case .string where token.text.uppercased().hasPrefix("X'"):
                let hex = Array(token.text.dropFirst(2).dropLast().utf8)
                var bytes = Data(capacity: hex.count / 2)
                var index = 0
                while index + 1 < hex.count {
                    guard let byte = UInt8(String(decoding: hex[index...index + 1], as: UTF8.self), radix: 16) else {
                        return nil
                    }
                    bytes.append(byte)
                    index += 2
                }
                values.append(.blob(bytes))
            case .string:
                values.append(
                    .text(String(token.text.dropFirst().dropLast()).replacingOccurrences(of: "''", with: "'")))
            case .number:
                if let integer = Int64((negative ? "-" : "") + token.text) {
                    values.append(.integer(integer))
                } else if let real = Double((negative ? "-" : "") + token.text) {
                    values.append(.real(real))
                } else {
                    return nil
                }
            case .word where token.upper == "NULL":
                values.append(.null)
            default:
                return nil
            }
            negative = false
        }
        return values
    }

    private static func malformed(_ value: DatabaseValue) -> ChangeLogError {
        ChangeLogError(
            .metadatabase, "a change-log key (\(value.diagnosticDescription)) is not in the form the triggers write",
            fix: "the metadatabase was edited by hand; run ostore check")
    }
}
