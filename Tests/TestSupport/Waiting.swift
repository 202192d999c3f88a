import Dispatch
import Foundation

/// Thrown when work on another thread did not finish in time (a deadlock or a blocked call).
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "timed out waiting for \(what)" }

    public init(what: String) {
        self.what = what
    }
}

/// Runs `work` on a dispatch thread and waits at most `seconds` for it, so a deadlock fails the test
/// instead of hanging the run.
public func onAnotherThread<Output: Sendable>(
    _ what: String, timeout seconds: Double = 20, _ work: @escaping @Sendable () throws -> Output
) throws -> Output {
    let result = Locked<Result<Output, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        let outcome = Result { try work() }
        result.withLock { $0 = outcome }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success, let outcome = result.value else {
        throw TimedOut(what: what)
    }
    return try outcome.get()
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; whether it held.
public func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
