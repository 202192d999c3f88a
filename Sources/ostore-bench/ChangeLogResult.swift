import Foundation

/// One change-log measurement: a time (median and range of the timed runs) or a size in bytes,
/// against what it is judged by, when it has one.
struct ChangeLogResult: Encodable {
    enum Figure {
        case time(TimingSummary)
        case bytes(Int)

        var value: Double {
            switch self {
            case .time(let summary): summary.median
            case .bytes(let bytes): Double(bytes)
            }
        }

        var formatted: String {
            switch self {
            case .time(let summary):
                let digits = summary.median < 10 ? 3 : 1
                return String(
                    format: "%.\(digits)f ms (%.\(digits)f–%.\(digits)f)", summary.median, summary.min, summary.max)
            case .bytes(let bytes):
                return String(format: "%.1f MiB", Double(bytes) / 1_048_576)
            }
        }
    }

    let workload: String
    let rows: Int
    let ours: Figure
    /// What `baseline` is ("C, untracked"); nil when the figure stands alone.
    let baselineName: String?
    let baseline: Figure?
    /// The target in words ("≤ 2.0x"), and whether this run met it (nil: shown for context only).
    let target: String
    let met: Bool?
    /// Shown only when ours and the baseline measure the same thing in the same unit.
    var ratio: Double? { baseline.map { ours.value / $0.value } }

    enum CodingKeys: String, CodingKey {
        case workload, rows, target, met, ratio
        case oursMilliseconds = "ours_ms"
        case oursBytes = "ours_bytes"
        case baselineName = "baseline"
        case baselineMilliseconds = "baseline_ms"
        case baselineBytes = "baseline_bytes"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode(rows, forKey: .rows)
        try Self.encode(ours, time: .oursMilliseconds, bytes: .oursBytes, in: &container)
        try container.encode(baselineName, forKey: .baselineName)
        if let baseline {
            try Self.encode(baseline, time: .baselineMilliseconds, bytes: .baselineBytes, in: &container)
        }
        try container.encode(ratio.map { ($0 * 1000).rounded() / 1000 }, forKey: .ratio)
        try container.encode(target, forKey: .target)
        try container.encode(met, forKey: .met)
    }

    private static func encode(
        _ figure: Figure, time: CodingKeys, bytes: CodingKeys, in container: inout KeyedEncodingContainer<CodingKeys>
    ) throws {
        switch figure {
        case .time(let summary): try container.encode(summary, forKey: time)
        case .bytes(let count): try container.encode(count, forKey: bytes)
        }
    }

    static func json(_ results: [ChangeLogResult]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func table(_ results: [ChangeLogResult]) -> String {
        let header = ["workload", "rows", "ours (range)", "vs", "vs (range)", "ratio", "target", ""]
        let body = results.map { result in
            [
                result.workload, String(result.rows), result.ours.formatted, result.baselineName ?? "—",
                result.baseline?.formatted ?? "", result.ratio.map { String(format: "%.2fx", $0) } ?? "—",
                result.target, result.met.map { $0 ? "met" : "MISSED" } ?? "",
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
}
