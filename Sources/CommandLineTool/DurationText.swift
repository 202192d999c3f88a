import Foundation

/// A span of time as an option gives it: a whole number followed by `s`, `m`, `h` or `d`
/// (seconds, minutes, hours, days), such as `90d` or `12h`.
///
/// ```swift
/// DurationText.seconds(in: "12h")  // 43200
/// DurationText.seconds(in: "12")   // nil: the unit is required
/// ```
package enum DurationText {
    /// The longest span taken: a century, far past any expiry or retention anyone means.
    package static let maximumSeconds = 100 * 365 * 86_400

    package static func seconds(in text: String) -> Int? {
        guard let unit = text.last, let number = Int(text.dropLast()), number > 0,
            text.dropLast().allSatisfy(\.isASCII)
        else { return nil }
        let scale: Int
        switch unit {
        case "s": scale = 1
        case "m": scale = 60
        case "h": scale = 3_600
        case "d": scale = 86_400
        default: return nil
        }
        let (seconds, overflow) = number.multipliedReportingOverflow(by: scale)
        return overflow || seconds > maximumSeconds ? nil : seconds
    }
}
