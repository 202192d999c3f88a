import Foundation
import OfflineStore

/// What one read of a store's whole pending-change queue cost, measured in a process of its own.
struct PendingReadReport: Codable {
    var changes: Int
    var countMilliseconds: Double
    var readMilliseconds: Double
    /// Resident memory when the peak was reset, after the store was opened and before reading.
    var residentBeforeBytes: Int
    /// The process's peak resident memory after counting and reading.
    var peakBytes: Int
    /// Whether the kernel reset the peak before reading; if not, the peak also covers start-up.
    var peakWasReset: Bool

    /// How much the read raised the process's peak resident memory.
    var peakGrowthBytes: Int { max(0, peakBytes - residentBeforeBytes) }
}

/// Reads every pending change of a store the way a push does (``ChangeLog/pendingChanges(_:after:limit:)``
/// in batches, each after the last sequence of the one before), in a fresh child process of this
/// executable: a process's peak resident memory (`VmHWM`) only ever grows, so the peak of the
/// read must be taken in a process that has done nothing else that big.
enum PendingReadProbe {
    /// The hidden `ostore-bench` subcommand the child runs.
    static let subcommand = "changelog-read"
    static let batchSize = 1000

    /// In the parent: runs the probe on the store at `path` in a child process and returns its report.
    static func measure(storeAt path: String) throws -> PendingReadReport {
        try ChildProcessReport.run([subcommand, path], what: "the pending-change reader")
    }

    /// In the child: opens the store as an app does, resets the peak, counts and reads every
    /// pending change, and prints the report as JSON on standard output.
    static func runInChild(path: String) throws {
        let db = try Database(path: path)
        let log = try ChangeLog.open(db, migrator: try Migrator(plan: ChangeLogBenchPlan.self))
        // Writing 5 to clear_refs sets the peak to the current resident size (Linux 4.0 and later).
        let peakWasReset = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        let before = try ProcessMemory.status()
        let clock = ContinuousClock()

        let countStart = clock.now
        let pending = try log.pendingCount(db)
        let countDuration = clock.now - countStart

        let readStart = clock.now
        var read = 0
        var after: Int64?
        while true {
            let batch = try log.pendingChanges(db, after: after, limit: batchSize)
            guard let last = batch.last else { break }
            read += batch.count
            after = last.sequence
        }
        let readDuration = clock.now - readStart

        let peak = try ProcessMemory.status()
        try db.close()
        guard read == pending else {
            throw BenchmarkFailure(description: "read \(read) pending changes, but pendingCount says \(pending)")
        }
        let report = PendingReadReport(
            changes: read, countMilliseconds: milliseconds(countDuration), readMilliseconds: milliseconds(readDuration),
            residentBeforeBytes: before.resident, peakBytes: peak.peak, peakWasReset: peakWasReset)
        print(String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
    }
}
