import Foundation
import Synchronization

/// SIGTERM and SIGINT, taken from the moment this is made until the process ends: both are
/// blocked in every thread started afterwards and received by one thread of its own with
/// `sigwait`, so none is lost (a signal sent before anyone waits stays pending) and no handler
/// runs at an awkward moment. Make it first thing, before the threads a server starts.
///
/// ```swift
/// let stop = StopSignals()
/// let server = try HTTPServer(configuration: configuration, handler: handle)
/// stop.wait()  // until SIGTERM or SIGINT
/// ```
///
/// See <https://man7.org/linux/man-pages/man3/sigwait.3.html>.
package final class StopSignals: Sendable {
    private let raised = Atomic(false)
    private let semaphore = DispatchSemaphore(value: 0)

    package init() {
        var set = sigset_t()
        sigemptyset(&set)
        for signalNumber in [SIGTERM, SIGINT] {
            // A shell starts background jobs with SIGINT ignored, which would discard it even
            // while blocked.
            signal(signalNumber, SIG_DFL)
            sigaddset(&set, signalNumber)
        }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let blocked = set
        let waiter = Thread { [self] in
            // Named on the running thread: a name given before the start stays in Foundation on Linux.
            Thread.current.name = "stop-signals"
            var received: Int32 = 0
            var waited = blocked
            while sigwait(&waited, &received) != 0 {}
            raised.store(true, ordering: .relaxed)
            semaphore.signal()
        }
        waiter.start()
    }

    /// Whether SIGTERM or SIGINT has arrived.
    package var isRaised: Bool { raised.load(ordering: .relaxed) }

    /// Blocks until SIGTERM or SIGINT arrives.
    package func wait() {
        semaphore.wait()
        semaphore.signal()
    }
}
