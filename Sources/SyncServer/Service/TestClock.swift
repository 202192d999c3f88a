import Foundation
import SyncProtocol

/// The test clock of a conformance run: a request carrying `OStore-Test-Now: <milliseconds>` is
/// answered as if the server's clock read that (the drift checks of a push, a hello's
/// `serverTime`), so vectors that name the server's `now` replay as they stand. Honoured only by a
/// service made with `allowsTestClock` (`ostore-server serve --allow-test-clock`); any other
/// service refuses a request carrying the header, so a client cannot move a production server's
/// clock and a test never runs on the real clock by mistake.
///
/// ```swift
/// let now = try TestClock.milliseconds(in: request.headers, allowed: allowsTestClock) ?? wallClock()
/// ```
public enum TestClock {
    public static let header = "OStore-Test-Now"

    /// The clock the headers fix, nil when they fix none. Throws `400 invalid_message` for the
    /// header on a service that does not allow it, or for a value that is not a clock's
    /// milliseconds (canonical decimal, 0 to 2^48−1).
    static func milliseconds(in headers: HTTPHeaders, allowed: Bool) throws(ErrorBody) -> Int64? {
        guard let text = headers[header] else { return nil }
        guard allowed else {
            throw ErrorBody(
                .invalidMessage,
                "this server does not honour \(header) (it was not started with --allow-test-clock); remove the header")
        }
        guard let clock = ChangeClock("\(text.trimmingCharacters(in: .whitespaces))-0") else {
            throw ErrorBody(
                .invalidMessage,
                "\(header) is milliseconds since 1970 as a decimal, 0 to \(ChangeClock.maximumMilliseconds), not "
                    + "\(text.prefix(40).debugDescription)")
        }
        return clock.milliseconds
    }
}
