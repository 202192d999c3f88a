import Foundation

/// Decodes the key of a log entry back into values: a one-column key is stored as itself; a
/// composite key as the `quote()` SQL literal of each column joined by commas, read back here by
/// a literal parser (the text is data and is never run as SQL).
enum LoggedKey {
    static func values(_ stored: DatabaseValue, columnCount: Int) throws -> [DatabaseValue] {
        guard columnCount > 1 else { return [stored] }
        guard case .text(let text) = stored else { throw malformed(stored) }
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
                        throw malformed(stored)
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
                    throw malformed(stored)
                }
            case .word where token.upper == "NULL":
                values.append(.null)
            default:
                throw malformed(stored)
            }
            negative = false
        }
        guard values.count == columnCount else { throw malformed(stored) }
        return values
    }

    private static func malformed(_ value: DatabaseValue) -> ChangeLogError {
        ChangeLogError(
            .metadatabase, "a change-log key (\(value.diagnosticDescription)) is not in the form the triggers write",
            fix: "the metadatabase was edited by hand; run ostore check")
    }
}
