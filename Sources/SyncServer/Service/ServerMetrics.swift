import Foundation

/// What `/metrics` reports, in Prometheus' text format: requests by route and status, changes
/// pushed and pulled, request latency as a histogram, open connections.
///
/// See <https://prometheus.io/docs/instrumenting/exposition_formats/>.
public final class ServerMetrics: Sendable {
    static let latencyBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

    private struct Counts {
        var requests: [String: Int] = [:]  // "route|status"
        var changesPushed = 0
        var changesPulled = 0
        var latencyBucketCounts = [Int](repeating: 0, count: ServerMetrics.latencyBuckets.count)
        var latencyCount = 0
        var latencySum = 0.0
        var waitedPulls = 0
    }

    private let counts = LockedState(Counts())

    public init() {}

    /// One answer. A live pull that waited is counted among the requests but not in the latency
    /// histogram, where its wait would hide how long answers take.
    func recordRequest(route: String, status: Int, seconds: Double, waited: Bool = false) {
        counts.withLock { counts in
            counts.requests["\(route)|\(status)", default: 0] += 1
            if waited {
                counts.waitedPulls += 1
                return
            }
            for (index, bound) in Self.latencyBuckets.enumerated() where seconds <= bound {
                counts.latencyBucketCounts[index] += 1
            }
            counts.latencyCount += 1
            counts.latencySum += seconds
        }
    }

    func recordPushed(_ count: Int) { counts.withLock { $0.changesPushed += count } }
    func recordPulled(_ count: Int) { counts.withLock { $0.changesPulled += count } }

    /// The exposition text; `openConnections` comes from the HTTP layer, `waitingPulls` from the
    /// service.
    public func render(openConnections: Int, waitingPulls: Int = 0) -> String {
        let snapshot = counts.withLock { $0 }
        var text = "# HELP ostore_requests_total Requests answered, by route and status.\n"
        text += "# TYPE ostore_requests_total counter\n"
        for (label, count) in snapshot.requests.sorted(by: { $0.key < $1.key }) {
            let parts = label.split(separator: "|", maxSplits: 1)
            text += "ostore_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"} \(count)\n"
        }
        text += "# HELP ostore_changes_pushed_total Changes stored from pushes (replays not counted).\n"
        text += "# TYPE ostore_changes_pushed_total counter\nostore_changes_pushed_total \(snapshot.changesPushed)\n"
        text += "# HELP ostore_changes_pulled_total Changes sent in pull answers.\n"
        text += "# TYPE ostore_changes_pulled_total counter\nostore_changes_pulled_total \(snapshot.changesPulled)\n"
        text += "# HELP ostore_request_duration_seconds Time from request to answer.\n"
        text += "# TYPE ostore_request_duration_seconds histogram\n"
        for (index, bound) in Self.latencyBuckets.enumerated() {
            text += "ostore_request_duration_seconds_bucket{le=\"\(bound)\"} \(snapshot.latencyBucketCounts[index])\n"
        }
        text += "ostore_request_duration_seconds_bucket{le=\"+Inf\"} \(snapshot.latencyCount)\n"
        text += "ostore_request_duration_seconds_sum \(snapshot.latencySum)\n"
        text += "ostore_request_duration_seconds_count \(snapshot.latencyCount)\n"
        text += "# HELP ostore_open_connections HTTP connections open now.\n"
        text += "# TYPE ostore_open_connections gauge\nostore_open_connections \(openConnections)\n"
        text += "# HELP ostore_waiting_pulls Live pulls waiting for a change now.\n"
        text += "# TYPE ostore_waiting_pulls gauge\nostore_waiting_pulls \(waitingPulls)\n"
        text += "# HELP ostore_waited_pulls_total Live pulls answered after waiting (not in the latency histogram).\n"
        text += "# TYPE ostore_waited_pulls_total counter\nostore_waited_pulls_total \(snapshot.waitedPulls)\n"
        return text
    }
}
