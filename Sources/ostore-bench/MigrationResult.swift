import Foundation

/// One migration measurement against what it is judged by: the C reference for the rebuild and
/// the open, the same stage on fewer rows for the lightweight stages (which must not grow).
struct MigrationResult: Encodable {
    let workload: String
    let rows: Int
    let ours: TimingSummary
    /// What `baseline` is: "C reference", or "10000 rows".
    let baselineName: String
    let baseline: TimingSummary
    /// The target in words ("≤ 1.1x"), and whether this run met it (nil: shown for context only).
    let target: String
    let met: Bool?
    var ratio: Double { ours.median / baseline.median }

    enum CodingKeys: String, CodingKey {
        case workload, rows, target, met, ratio
        case ours = "ours_ms"
        case baselineName = "baseline"
        case baseline = "baseline_ms"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode(rows, forKey: .rows)
        try container.encode(ours, forKey: .ours)
        try container.encode(baselineName, forKey: .baselineName)
        try container.encode(baseline, forKey: .baseline)
        try container.encode((ratio * 1000).rounded() / 1000, forKey: .ratio)
        try container.encode(target, forKey: .target)
        try container.encode(met, forKey: .met)
    }

    static func json(_ results: [MigrationResult]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func table(_ results: [MigrationResult]) -> String {
        let header = ["workload", "rows", "ours ms (range)", "vs", "vs ms (range)", "ratio", "target", ""]
        let body = results.map { result in
            [
                result.workload, String(result.rows), format(result.ours), result.baselineName,
                format(result.baseline), String(format: "%.2fx", result.ratio), result.target,
                result.met.map { $0 ? "met" : "MISSED" } ?? "",
            ]
        }
        let rows = [header] + body
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        // Numbers right-aligned, text left-aligned, as in docs/performance.md.
        let rightAligned: Set<Int> = [1, 2, 4, 5]
        return rows.map { row in
            row.enumerated().map { column, text in
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return rightAligned.contains(column) ? padding + text : text + padding
            }.joined(separator: "  ").replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }.joined(separator: "\n")
    }

    private static func format(_ summary: TimingSummary) -> String {
        let digits = summary.median < 10 ? 3 : 1
        return String(format: "%.\(digits)f (%.\(digits)f–%.\(digits)f)", summary.median, summary.min, summary.max)
    }
}
