import Foundation

/// One workload of `ostore-bench sync`: our time against the limit measured in the same run, and
/// where the time went.
struct SyncResult: Encodable {
    let workload: String
    let changes: Int
    let oursMilliseconds: Double
    /// What the limit is made of ("HTTP + C insert").
    let referenceName: String
    let referenceMilliseconds: Double
    /// CPU time (user + system) the server process used during the workload.
    var serverCPUMilliseconds: Double?
    /// CPU time (user + system) the client process used during its sync.
    var clientCPUMilliseconds: Double?
    /// The client process's peak resident memory (`VmHWM`).
    var clientPeakBytes: Int?
    /// With `--runs` above 1, on the end-to-end row: every run's changes per second, in run order
    /// (the row itself is the median run's).
    var runRates: [Double]?
    var target = "—"
    var met: Bool?

    init(
        workload: String, changes: Int, ours: Double, referenceName: String, reference: Double,
        serverCPUMilliseconds: Double? = nil, clientCPUMilliseconds: Double? = nil, clientPeakBytes: Int? = nil,
        target: String = "—", met: Bool? = nil
    ) {
        self.workload = workload
        self.changes = changes
        oursMilliseconds = ours
        self.referenceName = referenceName
        referenceMilliseconds = reference
        self.serverCPUMilliseconds = serverCPUMilliseconds
        self.clientCPUMilliseconds = clientCPUMilliseconds
        self.clientPeakBytes = clientPeakBytes
        self.target = target
        self.met = met
    }

    var ratio: Double { oursMilliseconds / referenceMilliseconds }
    var changesPerSecond: Double { Double(changes) / oursMilliseconds * 1000 }

    enum CodingKeys: String, CodingKey {
        case workload
        case oursMilliseconds = "ours_ms"
        case referenceMilliseconds = "reference_ms"
        case ratio
        case changes
        case changesPerSecond = "changes_per_s"
        case referenceName = "reference"
        case serverCPUMilliseconds = "server_cpu_ms"
        case clientCPUMilliseconds = "client_cpu_ms"
        case clientPeakBytes = "client_peak_bytes"
        case runRates = "runs_changes_per_s"
        case target
        case met
    }

    func encode(to encoder: any Encoder) throws {
        func rounded(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(workload, forKey: .workload)
        try container.encode(rounded(oursMilliseconds), forKey: .oursMilliseconds)
        try container.encode(rounded(referenceMilliseconds), forKey: .referenceMilliseconds)
        try container.encode(rounded(ratio), forKey: .ratio)
        try container.encode(changes, forKey: .changes)
        try container.encode(changesPerSecond.rounded(), forKey: .changesPerSecond)
        try container.encode(referenceName, forKey: .referenceName)
        try container.encodeIfPresent(serverCPUMilliseconds.map(rounded), forKey: .serverCPUMilliseconds)
        try container.encodeIfPresent(clientCPUMilliseconds.map(rounded), forKey: .clientCPUMilliseconds)
        try container.encodeIfPresent(clientPeakBytes, forKey: .clientPeakBytes)
        try container.encodeIfPresent(runRates?.map { $0.rounded() }, forKey: .runRates)
        try container.encode(target, forKey: .target)
        try container.encodeIfPresent(met, forKey: .met)
    }

    static func json(_ results: [SyncResult]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func table(_ results: [SyncResult]) -> String {
        let header = [
            "workload", "changes", "ours (ms)", "limit", "limit (ms)", "ratio", "changes/s", "server CPU (ms)",
            "client CPU (ms)", "client peak", "target",
        ]
        var rows = [header]
        for result in results {
            func optional(_ value: Double?) -> String { value.map { String(format: "%.0f", $0) } ?? "—" }
            let verdict = result.met.map { $0 ? ": met" : ": MISSED" } ?? ""
            rows.append([
                result.workload, String(result.changes), String(format: "%.0f", result.oursMilliseconds),
                result.referenceName, String(format: "%.0f", result.referenceMilliseconds),
                String(format: "%.2fx", result.ratio), String(format: "%.0f", result.changesPerSecond),
                optional(result.serverCPUMilliseconds), optional(result.clientCPUMilliseconds),
                result.clientPeakBytes.map { String(format: "%.1f MB", Double($0) / 1e6) } ?? "—",
                result.target + verdict,
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, text in
                column == 0 || column == 3 || column == row.count - 1
                    ? text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - text.count) + text
            }.joined(separator: "  ")
        }.joined(separator: "\n") + runsLine(results)
    }

    /// Under the table, with `--runs` above 1: the end to end of every run, lowest to highest.
    private static func runsLine(_ results: [SyncResult]) -> String {
        guard let rates = results.first(where: { $0.runRates != nil })?.runRates else { return "" }
        let each = rates.sorted().map { String(format: "%.0f", $0) }.joined(separator: ", ")
        return "\nend to end over \(rates.count) runs (changes/s, lowest to highest; the table shows the median run): "
            + each
    }
}
