import Foundation
import TestSupport
import Testing

@testable import SyncServer

/// The threads handlers run on: at most so many at once, in arrival order, and a handler waiting
/// for another request's work lends its place.
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

    /// With one place, a handler waiting (inside stepAside) for a job queued behind it: the job
    /// runs, and the waiter goes on. Without lending the place, it would wait forever.
    @Test func aHandlerSteppingAsideLetsTheJobItWaitsForRun() {
        let threads = HandlerThreads(limit: 1)
        let released = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        let order = Locked<[String]>([])
        finished.enter()
        threads.run {
            let arrived = HandlerThreads.stepAside { released.wait(timeout: .now() + 10) }
            order.withLock { $0.append(arrived == .success ? "waiter" : "waiter timed out") }
            finished.leave()
        }
        finished.enter()
        threads.run {
            order.withLock { $0.append("awaited") }
            released.signal()
            finished.leave()
        }
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(order.value == ["awaited", "waiter"])
    }

    /// A handler coming back from stepAside takes the next free place before any queued job: with
    /// one place, the waiter back from its wait runs before the jobs queued while it waited.
    @Test func aHandlerBackFromSteppingAsideGoesBeforeQueuedJobs() {
        let threads = HandlerThreads(limit: 1)
        let order = Locked<[String]>([])
        let waited = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        finished.enter()
        threads.run {
            HandlerThreads.stepAside { _ = waited.wait(timeout: .now() + 10) }
            order.withLock { $0.append("back") }
            finished.leave()
        }
        finished.enter()
        threads.run {
            // Holds the place until the waiter is back and more jobs are queued.
            waited.signal()
            _ = release.wait(timeout: .now() + 10)
            order.withLock { $0.append("first") }
            finished.leave()
        }
        // Waited for rather than slept on: on a loaded machine a fixed sleep can end before the waiter is back.
        #expect(eventually(timeout: .seconds(10)) { threads.waiting.returning == 1 })
        for index in 0..<3 {
            finished.enter()
            threads.run {
                order.withLock { $0.append("queued \(index)") }
                finished.leave()
            }
        }
        #expect(eventually(timeout: .seconds(10)) { threads.waiting.jobs == 3 })
        release.signal()
        #expect(finished.wait(timeout: .now() + 30) == .success)
        #expect(order.value == ["first", "back", "queued 0", "queued 1", "queued 2"])
    }
}
