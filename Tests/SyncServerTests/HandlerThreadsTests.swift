import Foundation
import TestSupport
import Testing

@testable import SyncServer

/// The threads handlers run on: at most so many at once, in arrival order.
@Suite("HTTP server: handler threads")
struct HandlerThreadsTests {
    @Test(arguments: [1, 2, 4]) func atMostTheLimitRunAtOnceAndAllRun(limit: Int) {
        let threads = HandlerThreads(limit: limit)
        let counts = Locked((now: 0, most: 0, done: 0))
        let finished = DispatchGroup()
        for _ in 0..<12 {
            finished.enter()
            threads.run {
                counts.withLock {
                    $0.now += 1
                    $0.most = max($0.most, $0.now)
                }
                usleep(50_000)
                counts.withLock {
                    $0.now -= 1
                    $0.done += 1
                }
                finished.leave()
            }
        }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(counts.value.done == 12)
        // Sleeping jobs overlap whatever the cores: the limit is reached, never passed.
        #expect(counts.value.most == limit)
    }
}
