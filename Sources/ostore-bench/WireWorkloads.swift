import CReferenceBench
import Foundation
import SyncProtocol

/// `ostore-bench wire`: the sync protocol's JSON on one push of `--rows` (default 5,000) `todos`
/// inserts shaped as the sync bench makes them (a UUID text key, a title, `done`, `updatedAt`),
/// each workload repeated over the body `rounds` times per timed run. The four passes a change
/// goes through end to end: client A writes the push, the server reads it and writes each change's
/// body and key for its log, client B reads the pull page. Each is compared with one C pass over
/// the same bytes (``ref_json_scan`` for reading, ``ref_json_copy_escaped`` for writing): the floor
/// of any JSON reader or writer, so the ratio says how much is spent per byte beyond looking at it.
struct WireWorkloads {
    let options: BenchmarkOptions
    /// Passes over the body per timed run, so one run lasts long enough to time.
    static let rounds = 10

    /// Changes each timed run reads or writes (`rounds` passes over the body).
    var changesPerRun: Int { (options.rows ?? 5_000) * Self.rounds }

    /// Medians per timed run of ``changesPerRun`` changes; ``table(_:)`` shows them per change too.
    func run() throws -> [BenchmarkResult] {
        let count = options.rows ?? 5_000
        let push = Self.push(count: count)
        let body = try Self.encodePush(push)
        guard let decoded = try? ProtocolJSON.decodePush(from: body, limits: .standard), decoded == push else {
            throw BenchmarkFailure(description: "the push body does not read back to the push written")
        }
        let page = PullResponse(changes: push.changes, cursor: "log:\(count)", hasMore: true, phase: .log, remaining: 0)
        var pageWriter = CanonicalJSONWriter(capacity: body.count + 256)
        try pageWriter.write(page)
        let pageBody = pageWriter.data
        guard MessageReader.readPullPage(pageBody) == page else {
            throw BenchmarkFailure(description: "the pull page does not read back to the page written")
        }

        var results: [BenchmarkResult] = []
        func add(
            _ workload: String, ours: () throws -> Void, reference: @escaping (UnsafePointer<UInt8>, Int64) -> Int64,
            on bytes: Data
        ) throws {
            guard options.includes(workload) else { return }
            let times = try measure(
                runs: options.runs, setUp: {}, ours: ours,
                reference: {
                    try bytes.withUnsafeBytes { raw in
                        let base = raw.bindMemory(to: UInt8.self).baseAddress!
                        for _ in 0..<Self.rounds {
                            guard reference(base, Int64(raw.count)) > 0 else {
                                throw BenchmarkFailure(description: "the C pass over the \(workload) bytes failed")
                            }
                        }
                    }
                })
            results.append(
                BenchmarkResult(
                    workload: workload, oursMilliseconds: times.ours, referenceMilliseconds: times.reference))
        }
        try add(
            "encode push (client A)", ours: { try Self.encodePushRounds(push) }, reference: ref_json_copy_escaped,
            on: body)
        try add("decode push (server)", ours: { try Self.decodePushRounds(body) }, reference: ref_json_scan, on: body)
        try add(
            "encode bodies and keys (server)", ours: { try Self.encodeLogRounds(push.changes) },
            reference: ref_json_copy_escaped, on: body)
        try add(
            "decode pull page (client B)", ours: { try Self.decodePageRounds(pageBody) }, reference: ref_json_scan,
            on: pageBody)
        return results
    }

    /// `count` inserts of the sync bench's `todos` rows, from one site, in queue order.
    static func push(count: Int) -> PushRequest {
        let site = SiteID(bytes: Data((0..<16).map { _ in UInt8.random(in: 0...255) }))!
        let changes = (0..<count).map { index in
            let id = WireValue.text(UUID().uuidString)
            return Change(
                table: "todos", key: ["id": id], op: .insert,
                columns: [
                    "id": id, "title": .text("Todo #\(index)"), "done": .integer(Int64(index % 2)),
                    "updatedAt": .real(1.7e9 + Double(index)),
                ],
                clock: ChangeClock(
                    validMilliseconds: 1_764_000_000_000 + Int64(index / 16), counter: Int64(index % 16)),
                site: site, seq: Int64(index + 1))
        }
        return PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: site, changes: changes)
    }

    /// A push body from `Change`s: the bytes a client writes from its queue (`PushBody`).
    static func encodePush(_ push: PushRequest) throws -> Data {
        var writer = CanonicalJSONWriter(capacity: 256 * push.changes.count + 256)
        try writer.write(push)
        return writer.data
    }

    // One function per workload, never inlined, so callgrind can count just it:
    // `valgrind --tool=callgrind --toggle-collect='*WireWorkloads*Rounds*' ostore-bench wire --runs 1`.

    @inline(never)
    static func encodePushRounds(_ push: PushRequest) throws {
        for _ in 0..<rounds {
            guard try !encodePush(push).isEmpty else { throw BenchmarkFailure(description: "an empty push body") }
        }
    }

    @inline(never)
    static func decodePushRounds(_ body: Data) throws {
        for _ in 0..<rounds {
            let push = try ProtocolJSON.decodePush(from: body, limits: .standard)
            guard !push.changes.isEmpty else { throw BenchmarkFailure(description: "a push without changes") }
        }
    }

    /// As the server's storage writes what it keeps of each change (`SQLiteSyncStorage+Push`).
    @inline(never)
    static func encodeLogRounds(_ changes: [Change]) throws {
        for _ in 0..<rounds {
            let bodies = try changes.map { change in try change.canonicalJSON() }
            let keys = try changes.map { change in try change.canonicalKeyJSON() }
            guard bodies.count == keys.count else { throw BenchmarkFailure(description: "bodies without keys") }
        }
    }

    @inline(never)
    static func decodePageRounds(_ body: Data) throws {
        for _ in 0..<rounds {
            guard let page = MessageReader.readPullPage(body), !page.changes.isEmpty else {
                throw BenchmarkFailure(description: "the pull page was not read")
            }
        }
    }

    /// ``BenchmarkResult/table(_:)`` (per timed run), then the same per change.
    func table(_ results: [BenchmarkResult]) -> String {
        var lines = [BenchmarkResult.table(results), "", "per change (\(changesPerRun) changes per run):"]
        let perChange = 1e6 / Double(changesPerRun)
        for result in results {
            lines.append(
                "  \(result.workload): "
                    + String(
                        format: "%.0f ns, C %.0f ns", result.oursMilliseconds * perChange,
                        result.referenceMilliseconds * perChange))
        }
        return lines.joined(separator: "\n")
    }
}
