import Foundation

/// HTTP-dates (RFC 9110, section 5.6.7), parsed by hand: no `DateFormatter`, whose locale,
/// time zone and thread-safety rules are easy to get wrong. All three forms are accepted, as the
/// RFC asks of recipients:
///
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (what servers send);
/// - RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (two-digit years: a year more than 50 years ahead
///   of now is taken as the past century's);
/// - asctime: `Sun Nov  6 08:49:37 1994`.
///
/// The weekday is checked for form, not against the date.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let shortDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    private static let longDays = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    static func parse(_ text: String, now: Date = Date()) -> Date? {
        let words = text.split(separator: " ", omittingEmptySubsequences: true).map { $0.lowercased() }
        if words.count == 6, words[0].hasSuffix(","), shortDays.contains(String(words[0].dropLast())),
            words[5] == "gmt"
        {
            // IMF-fixdate: day-name "," SP date1 SP time-of-day SP GMT, date1 = day SP month SP year
            guard words[1].count == 2, let day = Int(words[1]), let month = months.firstIndex(of: words[2]),
                words[3].count == 4, let year = Int(words[3])
            else { return nil }
            return date(year: year, month: month + 1, day: day, time: words[4])
        }
        if words.count == 4, words[0].hasSuffix(","), longDays.contains(String(words[0].dropLast())),
            words[3] == "gmt"
        {
            // rfc850-date: day-name-l "," SP date2 SP time-of-day SP GMT, date2 = day "-" month "-" 2DIGIT
            let parts = words[1].split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 2, let day = Int(parts[0]),
                let month = months.firstIndex(of: String(parts[1])), parts[2].count == 2, let shortYear = Int(parts[2])
            else { return nil }
            let currentYear = Calendar(identifier: .gregorian).dateComponents(in: .gmt, from: now).year ?? 2000
            var year = currentYear - currentYear % 100 + shortYear
            if year > currentYear + 50 { year -= 100 }
            return date(year: year, month: month + 1, day: day, time: words[2])
        }
        if words.count == 5, shortDays.contains(words[0]) {
            // asctime-date: day-name SP month SP ( 2DIGIT / ( SP DIGIT )) SP time-of-day SP year
            guard let month = months.firstIndex(of: words[1]), (1...2).contains(words[2].count),
                let day = Int(words[2]), words[4].count == 4, let year = Int(words[4])
            else { return nil }
            return date(year: year, month: month + 1, day: day, time: words[3])
        }
        return nil
    }

    /// The instant of a UTC date and an `hh:mm:ss` time, or nil when out of range.
    private static func date(year: Int, month: Int, day: Int, time: String) -> Date? {
        let parts = time.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), let second = Int(parts[2]),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), year >= 1
        else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
