import Dispatch
import Foundation
import OfflineStore
import Synchronization
import Testing

@testable import OfflineStoreSQLite

/// Values handed to ``BackgroundRelease`` are freed, and not on the thread that handed them over.
@Suite("Background release")
struct BackgroundReleaseTests {
    /// Where a ``Tracked`` was freed.
    private final class FreeRecord: Sendable {
        let thread = Mutex<pthread_t?>(nil)
        let freed = DispatchSemaphore(value: 0)
    }

    /// Records the thread its last reference was let go on.
    private final class Tracked: Sendable {
        let record: FreeRecord

        init(_ record: FreeRecord) {
            self.record = record
        }

        deinit {
            record.thread.withLock { $0 = pthread_self() }
            record.freed.signal()
        }
    }

    @Test func aReleasedValueIsTakenOutAndFreedOnAnotherThread() throws {
        let record = FreeRecord()
        var value: Tracked? = Tracked(record)
        BackgroundRelease.release(&value)
        #expect(value == nil)
        #expect(record.freed.wait(timeout: .now() + 10) == .success)
        let thread = try #require(record.thread.withLock { $0 })
        #expect(pthread_equal(thread, pthread_self()) == 0)
    }

    @Test func releasingNothingDoesNothing() {
        var value: [Int]? = nil
        BackgroundRelease.release(&value)
        #expect(value == nil)
    }
}
