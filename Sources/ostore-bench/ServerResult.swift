import Foundation

/// One phase (push or pull) of one client count: throughput, request latencies, and the server's
/// CPU time.
struct Phase: Encodable {
    let changesPerSecond: Double
    let requests: Int
    let p50Milliseconds: Double
    let p99Milliseconds: Double
    let seconds: Double
    /// User + system CPU the server process used during the phase.
    let serverCPUSeconds: Double
    /// Bytes the server had written to the disk during the phase (PostgreSQL's own not counted).
    let serverDiskWrittenBytes: Int

    init(_ outcome: ServerWorkloads.Outcome, serverCPUSeconds: Double, serverDiskWrittenBytes: Int) {
        let sorted = outcome.latencies.sorted()
        /// Nearest rank: the smallest latency at or above which `fraction` of the requests lie.
        func percentile(_ fraction: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let rank = Int((fraction * Double(sorted.count)).rounded(.up))
            return sorted[min(max(rank, 1), sorted.count) - 1]
        }
        changesPerSecond = Double(outcome.counts.reduce(0, +)) / outcome.seconds
        requests = sorted.count
        p50Milliseconds = percentile(0.50)
        p99Milliseconds = percentile(0.99)
        seconds = outcome.seconds
        self.serverCPUSeconds = serverCPUSeconds
        self.serverDiskWrittenBytes = serverDiskWrittenBytes
    }

    enum CodingKeys: String, CodingKey {
        case changesPerSecond = "changes_per_s"
        case requests
        case p50Milliseconds = "p50_ms"
        case p99Milliseconds = "p99_ms"
        case seconds = "wall_s"
        case serverCPUSeconds = "server_cpu_s"
        case serverDiskWrittenBytes = "server_disk_written_bytes"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(changesPerSecond.rounded(), forKey: .changesPerSecond)
        try container.encode(requests, forKey: .requests)
        try container.encode((p50Milliseconds * 1000).rounded() / 1000, forKey: .p50Milliseconds)
        try container.encode((p99Milliseconds * 1000).rounded() / 1000, forKey: .p99Milliseconds)
        try container.encode((seconds * 1000).rounded() / 1000, forKey: .seconds)
        try container.encode((serverCPUSeconds * 1000).rounded() / 1000, forKey: .serverCPUSeconds)
        try container.encode(serverDiskWrittenBytes, forKey: .serverDiskWrittenBytes)
    }
}

/// One client count of `ostore-bench server`.
struct ServerResult: Encodable {
    let backend: String
    /// Server processes sharing the storage.
    let servers: Int
    let clients: Int
    let batch: Int
    let pushed: Int
    let push: Phase
    let pulled: Int
    let pull: Phase
    /// The largest `VmHWM` of the servers at the end of the run (after both phases).
    let serverPeakBytes: Int
    /// Whether the push target was met; nil for client counts the target does not name.
    let met: Bool?

    enum CodingKeys: String, CodingKey {
        case backend, servers, clients, batch, pushed, push, pulled, pull, target, met
        case serverPeakBytes = "server_peak_rss_bytes"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(backend, forKey: .backend)
        try container.encode(servers, forKey: .servers)
        try container.encode(clients, forKey: .clients)
        try container.encode(batch, forKey: .batch)
        try container.encode(pushed, forKey: .pushed)
        try container.encode(push, forKey: .push)
        try container.encode(pulled, forKey: .pulled)
        try container.encode(pull, forKey: .pull)
        try container.encode(serverPeakBytes, forKey: .serverPeakBytes)
        try container.encode(met == nil ? nil : Self.target, forKey: .target)
        try container.encode(met, forKey: .met)
    }

    static let target =
        "push ≥ \(Int(ServerWorkloads.pushTarget)) changes/s with \(ServerWorkloads.targetClients) clients"

    static func json(_ results: [ServerResult]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    static func table(_ results: [ServerResult]) -> String {
        let header = [
            "servers", "clients", "pushed", "push/s", "push p50", "push p99", "srv CPU", "disk/chg", "pulled", "pull/s",
            "pull p50", "pull p99", "srv CPU", "srv peak RSS", "target",
        ]
        func ms(_ value: Double) -> String { String(format: value < 100 ? "%.1f ms" : "%.0f ms", value) }
        func rate(_ value: Double) -> String { String(Int(value.rounded())) }
        let body = results.map { result in
            [
                String(result.servers), String(result.clients), String(result.pushed),
                rate(result.push.changesPerSecond),
                ms(result.push.p50Milliseconds), ms(result.push.p99Milliseconds),
                String(format: "%.1f s", result.push.serverCPUSeconds),
                String(
                    format: "%.1f KiB",
                    Double(result.push.serverDiskWrittenBytes) / 1024 / Double(max(result.pushed, 1))),
                String(result.pulled),
                rate(result.pull.changesPerSecond), ms(result.pull.p50Milliseconds), ms(result.pull.p99Milliseconds),
                String(format: "%.1f s", result.pull.serverCPUSeconds),
                String(format: "%.1f MiB", Double(result.serverPeakBytes) / 1_048_576),
                result.met.map { $0 ? "met" : "MISSED" } ?? "",
            ]
        }
        let rows = [header] + body
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        var lines = rows.map { row in
            row.enumerated().map { column, text in
                let padding = String(repeating: " ", count: widths[column] - text.count)
                return column == row.count - 1 ? text + padding : padding + text
            }.joined(separator: "  ").replacingOccurrences(of: " +$", with: "", options: .regularExpression)
        }
        let backend = results.first?.backend ?? "sqlite"
        let batch = results.first?.batch ?? 0
        lines.insert("backend \(backend), \(batch) changes per push; target: \(target)", at: 0)
        return lines.joined(separator: "\n")
    }
}
