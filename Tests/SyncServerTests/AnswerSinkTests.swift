import Foundation
import SyncServer
import Synchronization
import TestSupport
import Testing

/// The answer sink (the request log) is called the same way on every request, however many came
/// before.
@Suite("The answer sink")
struct AnswerSinkTests {
    /// Each call of the sink starts at the same depth of the calling thread's stack: a sink read
    /// back wrapped in a new reabstraction thunk on every request made each call deeper than the
    /// last (and each request slower), until the stack overflowed.
    @Test func everyAnswerReachesTheSinkAtTheSameStackDepth() throws {
        let directory = try TemporaryDirectory()
        let service = SyncService(
            storage: try SQLiteSyncStorage(directory: URL(fileURLWithPath: directory.path("data"))))
        let depths = Mutex<[UInt]>([])
        service.reportAnswers { _, _, _ in
            var marker = 0
            withUnsafeMutablePointer(to: &marker) { pointer in
                let address = UInt(bitPattern: pointer)
                depths.withLock { $0.append(address) }
            }
        }
        let metricsRequest = HTTPRequest(method: "GET", path: "/metrics")
        for _ in 0..<2_000 {
            _ = service.handle(metricsRequest)
        }
        let seen = depths.withLock { $0 }
        #expect(seen.count == 2_000)
        let spread = (seen.max() ?? 0) - (seen.min() ?? 0)
        #expect(spread < 1_024, "the sink ran \(spread) bytes deeper at the last request than at the first")
    }
}
