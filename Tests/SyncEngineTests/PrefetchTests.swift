import Foundation
import TestSupport
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

    /// `ended` (the engine logs a page there, through the app's handler) runs once the answer is
    /// ready, and a handler that blocks does not hold the answer back from `value()`; `abandon()`
    /// waits for `ended` too, so nothing runs for the engine once it has returned.
    @Test func endedSeesTheAnswerReadyAndHoldsBackOnlyAbandon() throws {
        let endedStarted = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let sawReady = Locked<Bool?>(nil)
        let endedReturned = Locked(false)
        let box = Locked<Prefetch<String>?>(nil)
        let request = Prefetch(
            { (_) throws(SyncError) -> String in "answered" },
            ended: { outcome in
                sawReady.value = box.value?.isReady
                endedStarted.signal()
                _ = release.wait(timeout: .now() + 30)
                endedReturned.value = (try? outcome.get()) == "answered"
            },
            start: { run in
                // Started once the request is in the box, so `ended` can look at it.
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.05, execute: run)
                return true
            })
        box.value = request
        #expect(endedStarted.wait(timeout: .now() + 10) == .success)
        #expect(sawReady.value == true)
        #expect(try request.value() == "answered")
        #expect(endedReturned.value == false)
        let abandoned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            request.abandon()
            abandoned.signal()
        }
        #expect(abandoned.wait(timeout: .now() + 0.2) == .timedOut)
        release.signal()
        #expect(abandoned.wait(timeout: .now() + 10) == .success)
        #expect(endedReturned.value)
    }
}
