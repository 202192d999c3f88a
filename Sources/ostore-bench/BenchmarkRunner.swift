import Foundation

struct BenchmarkOptions {
    /// nil: each group's own default.
    var rows: Int?
    var runs = 5
    var json = false
    var only: String?

    func includes(_ workload: String) -> Bool {
        only.map { workload.contains($0) } ?? true
    }
}

/// One workload's medians, ours against the C reference.
struct BenchmarkResult: Encodable {
    let workload: String
    let oursMilliseconds: Double
    let referenceMilliseconds: Double
    var ratio: Double { oursMilliseconds / referenceMilliseconds }

    enum CodingKeys: String, CodingKey {
        case workload
        case oursMilliseconds = "ours_ms"
        case referenceMilliseconds = "reference_ms"
        case ratio
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode((oursMilliseconds * 1000).rounded() / 1000, forKey: .oursMilliseconds)
        try container.encode((referenceMilliseconds * 1000).rounded() / 1000, forKey: .referenceMilliseconds)
        try container.encode((ratio * 1000).rounded() / 1000, forKey: .ratio)
    }

    static func json(_ results: [BenchmarkResult]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func table(_ results: [BenchmarkResult]) -> String {
        let width = max(8, results.map(\.workload.count).max() ?? 0)
        func pad(_ text: String, _ count: Int) -> String { text.padding(toLength: count, withPad: " ", startingAt: 0) }
        var lines = ["\(pad("workload", width))   ours (ms)   C (ms)   ours/C"]
        for result in results {
            lines.append(
                pad(result.workload, width)
                    + String(
                        format: " %11.1f %8.1f %8.2fx", result.oursMilliseconds, result.referenceMilliseconds,
                        result.ratio))
        }
        return lines.joined(separator: "\n")
    }
}

/// Times `body` `runs` times after `setUp` (untimed) and returns the median in milliseconds.
/// One untimed round warms caches and the allocator first; then ours and the reference
/// alternate per run so drift in the machine hits both alike.
func measure(
    runs: Int, setUp: () throws -> Void, ours: () throws -> Void, reference: () throws -> Void
) throws -> (ours: Double, reference: Double) {
    try setUp()
    try ours()
    try setUp()
    try reference()
    var oursTimes: [Double] = []
    var referenceTimes: [Double] = []
    let clock = ContinuousClock()
    for _ in 0..<runs {
        try setUp()
        let start = clock.now
        try ours()
        oursTimes.append(milliseconds(clock.now - start))
        try setUp()
        let referenceStart = clock.now
        try reference()
        referenceTimes.append(milliseconds(clock.now - referenceStart))
    }
    return (median(oursTimes), median(referenceTimes))
}

/// A duration in milliseconds.
func milliseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1000 + Double(attoseconds) / 1e15
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
}
