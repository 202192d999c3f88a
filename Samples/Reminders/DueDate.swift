/// A due date as the user types it, `YYYY-MM-DD`, checked strictly: four, two and two ASCII
/// digits naming a real day of the proleptic Gregorian calendar (so `2023-02-29` is refused
/// rather than rolled over to March, as SQLite's date functions would).
struct DueDate {
    /// The text as stored in `dueDate`.
    let text: String
    let year: Int
    let month: Int
    let day: Int

    init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1...12).contains(month), (1...Self.daysIn(month: month, year: year)).contains(day)
        else { return nil }
        self.text = text
        self.year = year
        self.month = month
        self.day = day
    }

    /// Midnight UTC of the day in seconds since 1970: the value `unixepoch(dueDate)` gives, so a
    /// reminder written at 2.0 gets the same `dueAt` the 2.0 migration backfilled for older rows.
    var secondsSince1970: Double {
        Double(daysSince1970) * 86_400
    }

    /// Howard Hinnant's `days_from_civil`: counts from March so the leap day ends the year.
    private var daysSince1970: Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }
}
