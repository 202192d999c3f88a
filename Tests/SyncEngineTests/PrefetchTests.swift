import Foundation
import Testing

@testable import SyncClient

/// ``Prefetch``, the engine's requests on other threads.
@Suite("Sync engine: requests on threads of their own")
struct PrefetchTests {
    /// A request blocks its thread for as long as the network takes, backoff sleeps included: it
    /// runs on a thread of its own, never on one of Dispatch's shared workers, whose number is
    /// bounded (under the whole suite's load a task queued there started more than 10 s late).
    @Test func eachRequestRunsOnAThreadOfItsOwn() throws {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Requests that all block at once: each started without waiting for another to end.
        let requests = (0..<24).map { index in
            Prefetch { (_) throws(SyncError) -> String in
                started.signal()
                _ = release.wait(timeout: .now() + 30)
                return "\(index) \(Thread.current.name ?? "")"
            }
        }
        for _ in requests { #expect(started.wait(timeout: .now() + 10) == .success) }
        for _ in requests { release.signal() }
        let answers = try requests.map { try $0.value() }
        #expect(answers == (0..<24).map { "\($0) \(Prefetch<String>.threadName)" })
    }

    /// When the system makes no thread (too many already), the request still runs, on one of
    /// Dispatch's workers, and is answered: never waited for forever.
    @Test func aRequestWithoutAThreadOfItsOwnStillRuns() throws {
        let request = Prefetch({ (_) throws(SyncError) -> String in "answered" }, start: { _ in false })
        let deadline = ContinuousClock.now + .seconds(10)
        while !request.isReady, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
        try #require(request.isReady)
        #expect(try request.value() == "answered")
    }

    /// The answer is kept: asked again, it is the same, and cancelling after the end changes nothing.
    @Test func anAnswerIsReadTwiceAndAnEndedRequestIgnoresCancel() throws {
        let request = Prefetch { (isCancelled) throws(SyncError) -> Bool in isCancelled() }
        #expect(try request.value() == false)
        request.cancel()
        #expect(try request.value() == false)
        #expect(request.isReady)
    }
}
