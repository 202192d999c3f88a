import Foundation

/// The spread of one measurement's timed runs: the median is the figure, the range shows how
/// noisy the machine was while it was taken.
struct TimingSummary: Encodable {
    let median: Double
    let min: Double
    let max: Double
    let runs: Int

    init(_ milliseconds: [Double]) {
        let sorted = milliseconds.sorted()
        let middle = sorted.count / 2
        median = sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
        min = sorted.first ?? 0
        max = sorted.last ?? 0
        runs = sorted.count
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode((median * 1000).rounded() / 1000, forKey: .median)
        try container.encode((min * 1000).rounded() / 1000, forKey: .min)
        try container.encode((max * 1000).rounded() / 1000, forKey: .max)
        try container.encode(runs, forKey: .runs)
    }

    private enum CodingKeys: String, CodingKey {
        case median, min, max, runs
    }
}
