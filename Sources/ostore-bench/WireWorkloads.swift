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

    struct Result: Encodable {
        let workload: String
        let changes: Int
        let oursNanosecondsPerChange: Double
        let referenceNanosecondsPerChange: Double
        var ratio: Double { oursNanosecondsPerChange / referenceNanosecondsPerChange }

        enum CodingKeys: String, CodingKey {
            case workload, changes
            case oursNanosecondsPerChange = "ours_ns_per_change"
            case referenceNanosecondsPerChange = "reference_ns_per_change"
            case ratio
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(workload, forKey: .workload)
            try container.encode(changes, forKey: .changes)
            try container.encode(oursNanosecondsPerChange.rounded(), forKey: .oursNanosecondsPerChange)
            try container.encode(referenceNanosecondsPerChange.rounded(), forKey: .referenceNanosecondsPerChange)
            try container.encode((ratio * 1000).rounded() / 1000, forKey: .ratio)
        }
    }

    func run() throws -> [Result] {
        let count = options.rows ?? 5_000
        let push = Self.push(count: count)
        let body = try Self.encodePush(push)
        guard let decoded = try? ProtocolJSON.decodePush(from: body, limits: .standard), decoded == push else {
            throw BenchmarkFailure(description: "the push body does not read back to the push written")
        }
        let page = PullResponse(changes: push.changes, cursor: "log:\(count)", hasMore: true, phase: .log, remaining: 0)
        var pageWriter = CanonicalJSONWriter(capacity: body.count + 256)
        try pageWriter.write(page)
        let pageBody = Data(pageWriter.bytes)
        guard MessageReader.readPullPage(pageBody) == page else {
            throw BenchmarkFailure(description: "the pull page does not read back to the page written")
        }

        var results: [Result] = []
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
            let changes = Double(count * Self.rounds)
            results.append(
                Result(
                    workload: workload, changes: count, oursNanosecondsPerChange: times.ours * 1e6 / changes,
                    referenceNanosecondsPerChange: times.reference * 1e6 / changes))
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
                clock: ChangeClock(milliseconds: 1_764_000_000_000 + Int64(index / 16), counter: Int64(index % 16))!,
                site: site, seq: Int64(index + 1))
        }
        return PushRequest(protocolVersion: 1, schemaVersion: SchemaVersion(1, 0), site: site, changes: changes)
    }

    /// As the client writes a push body (`SyncRequests.encode(_:)`).
    static func encodePush(_ push: PushRequest) throws -> Data {
        var writer = CanonicalJSONWriter(capacity: 256 * push.changes.count + 256)
        try writer.write(push)
        return Data(writer.bytes)
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

    static func table(_ results: [Result]) -> String {
        let width = max(8, results.map(\.workload.count).max() ?? 0)
        func pad(_ text: String, _ count: Int) -> String { text.padding(toLength: count, withPad: " ", startingAt: 0) }
        var lines = ["\(pad("workload", width))   ours (ns/change)   C (ns/change)   ours/C"]
        for result in results {
            lines.append(
                pad(result.workload, width)
                    + String(
                        format: " %18.0f %15.0f %8.2fx", result.oursNanosecondsPerChange,
                        result.referenceNanosecondsPerChange, result.ratio))
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ results: [Result]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return (try? encoder.encode(results)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }
}
