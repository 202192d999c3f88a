import Foundation

/// A column value on the wire, tagged with its SQLite storage class so every class survives
/// exactly: `{"null":true}`, `{"integer":"-9223372036854775808"}` (a decimal string, since JSON
/// numbers lose precision past 2^53), `{"real":2.5}` (`"Infinity"` and `"-Infinity"` as strings;
/// SQLite stores no NaN), `{"text":"…"}`, `{"blob":"AAEC"}` (standard base64 with padding and
/// zero padding bits). Exactly one tag; anything else is refused. Integers and blobs are read
/// only in the one form they are written in (see `Protocol/README.md`, "Values", and the cases
/// of `Protocol/vectors/values.json`).
///
/// ```swift
/// let value = WireValue.integer(.max)
/// let json = try JSONEncoder().encode(value)  // {"integer":"9223372036854775807"}
/// ```
///
/// See <https://www.sqlite.org/datatype3.html> (storage classes).
public enum WireValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)
}

extension WireValue: Codable {
    private enum Tag: String, CodingKey, CaseIterable {
        case null, integer, real, text, blob
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let all = try decoder.container(keyedBy: AnyKey.self)
        guard all.allKeys.count == 1, let tag = Tag(rawValue: all.allKeys[0].stringValue) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath,
                    debugDescription:
                        "a value is an object with exactly one of the tags null, integer, real, text, blob; found "
                        + "\(all.allKeys.map(\.stringValue).sorted())"))
        }
        let container = try decoder.container(keyedBy: Tag.self)
        switch tag {
        case .null:
            guard try container.decode(Bool.self, forKey: .null) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .null, in: container, debugDescription: "null is written {\"null\":true}")
            }
            self = .null
        case .integer:
            let text = try container.decode(String.self, forKey: .integer)
            guard let integer = Self.parseInteger(text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .integer, in: container,
                    debugDescription: "\(text.prefix(40).debugDescription) is not a 64-bit decimal integer")
            }
            self = .integer(integer)
        case .real:
            if let number = try? container.decode(Double.self, forKey: .real) {
                self = .real(number)
            } else {
                // Not a number Foundation reads as a Double: one of the two strings, or refused with
                // one message whether it was another string or a number beyond the double range.
                switch try? container.decode(String.self, forKey: .real) {
                case "Infinity": self = .real(.infinity)
                case "-Infinity": self = .real(-.infinity)
                default:
                    throw DecodingError.dataCorruptedError(
                        forKey: .real, in: container,
                        debugDescription:
                            "a real is a JSON number within the double range, \"Infinity\" or \"-Infinity\"")
                }
            }
        case .text:
            self = .text(try container.decode(String.self, forKey: .text))
        case .blob:
            let text = try container.decode(String.self, forKey: .blob)
            // Foundation also reads non-canonical text ("AB==" as 0x00, even "====" as one byte),
            // so only the text that the bytes encode back to is accepted: one blob, one encoding.
            guard let data = Data(base64Encoded: text), data.base64EncodedString() == text else {
                throw DecodingError.dataCorruptedError(
                    forKey: .blob, in: container,
                    debugDescription: "a blob is standard base64 with padding (and zero padding bits)")
            }
            self = .blob(data)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Tag.self)
        switch self {
        case .null: try container.encode(true, forKey: .null)
        case .integer(let integer): try container.encode(String(integer), forKey: .integer)
        case .real(let real) where real.isInfinite:
            try container.encode(real > 0 ? "Infinity" : "-Infinity", forKey: .real)
        case .real(let real):
            guard !real.isNaN else {
                throw EncodingError.invalidValue(
                    real, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "NaN has no encoding")
                )
            }
            try container.encode(real, forKey: .real)
        case .text(let text): try container.encode(text, forKey: .text)
        case .blob(let data): try container.encode(data.base64EncodedString(), forKey: .blob)
        }
    }

    /// Only the canonical decimal form: an optional minus sign and digits, no `+`, no leading
    /// zeros, no spaces, so one integer has one encoding.
    static func parseInteger(_ text: String) -> Int64? {
        let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ (48...57).contains($0) }),
            digits == "0" || !digits.hasPrefix("0"), text != "-0"
        else { return nil }
        return Int64(text)
    }
}
