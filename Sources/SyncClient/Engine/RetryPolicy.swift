import Foundation

/// When to try a failed request again: exponential backoff with full jitter, starting at 1 s,
/// growing by 1.6 per attempt up to 2 minutes; a server's `Retry-After` (429, 503) is honoured
/// instead when it is longer. Only retryable errors are retried (network faults, 429, 5xx);
/// any other 4xx needs a change on this side.
///
/// ```swift
/// let policy = RetryPolicy(maximumAttempts: 5)
/// policy.delay(afterAttempt: 3, retryAfter: nil)  // somewhere in 0…4.096 s
/// ```
public struct RetryPolicy: Sendable {
    public var initialDelay: Double = 1
    public var factor: Double = 1.6
    public var maximumDelay: Double = 120
    /// Attempts per request, the first included; nil retries for as long as the error is retryable.
    public var maximumAttempts: Int?
    /// How the engine waits (a test may make it instant).
    public var sleep: @Sendable (Double) -> Void = { seconds in usleep(UInt32(min(seconds, 4_000) * 1_000_000)) }

    public init(maximumAttempts: Int? = 6) { self.maximumAttempts = maximumAttempts }

    /// The wait before attempt `attempt + 1` (attempts count from 1).
    public func delay(afterAttempt attempt: Int, retryAfter: Double?) -> Double {
        let ceiling = min(maximumDelay, initialDelay * pow(factor, Double(max(attempt - 1, 0))))
        let jittered = Double.random(in: 0...ceiling)
        return max(jittered, min(retryAfter ?? 0, maximumDelay))
    }
}
