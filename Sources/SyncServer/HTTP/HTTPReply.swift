import CMicroHTTPD
import Foundation
import Synchronization

/// What a handler gives back: a response now, or one it sends later, from any thread, while the
/// request waits without holding a thread.
///
/// ```swift
/// let server = try HTTPServer(configuration: configuration, replying: { request in
///     guard mustWait(request) else { return .response(answer(request)) }
///     let later = DeferredResponse()
///     whenReady { later.send(computing: { answer(request) }) }
///     return .deferred(later)
/// })
/// ```
public enum HTTPReply: Sendable {
    case response(HTTPResponse)
    case deferred(DeferredResponse)
}

/// A response a handler promised and sends later (``HTTPReply/deferred(_:)``). Meanwhile the
/// request's connection is suspended (`MHD_suspend_connection`): it costs no thread and is not
/// read; `send` resumes it (`MHD_resume_connection`, safe from any thread). Only the first `send`
/// counts. Every deferred response must be sent: the server's `stop` waits for them before it
/// closes connections, so a handler bounds how long it defers.
public final class DeferredResponse: Sendable {
    /// Where the response goes once it is known, and where blocking work runs to make it.
    struct Delivery: Sendable {
        let deliver: @Sendable (HTTPResponse) -> Void
        let compute: @Sendable (@escaping @Sendable () -> HTTPResponse) -> Void
    }

    private enum Stage {
        /// Not yet attached to where it goes: what `send` gave so far.
        case waiting(response: HTTPResponse?, work: (@Sendable () -> HTTPResponse)?)
        case attached(Delivery)
        case sent
    }

    private let stage = Mutex(Stage.waiting(response: nil, work: nil))

    public init() {}

    /// Answers with `response`.
    public func send(_ response: HTTPResponse) {
        takeDelivery(keeping: .waiting(response: response, work: nil))?.deliver(response)
    }

    /// Answers with what `work` returns, run on one of the server's handler threads: for work that
    /// blocks (storage), which must not run on the thread that calls this.
    public func send(computing work: @escaping @Sendable () -> HTTPResponse) {
        takeDelivery(keeping: .waiting(response: nil, work: work))?.compute(work)
    }

    /// The delivery to use now, or `nil` with `early` kept for ``attach(_:)`` (or dropped when
    /// something was sent already).
    private func takeDelivery(keeping early: Stage) -> Delivery? {
        stage.withLock { stage in
            switch stage {
            case .waiting(nil, nil):
                stage = early
                return nil
            case .attached(let delivery):
                stage = .sent
                return delivery
            case .waiting, .sent:
                return nil
            }
        }
    }

    /// The HTTP layer has suspended the request's connection: a response sent before is delivered
    /// now, and a later `send` delivers its own.
    func attach(_ request: SuspendedRequest) {
        attach(
            Delivery(
                deliver: { request.resume(with: $0) },
                compute: { work in
                    request.context.handlerThreads.run { request.resume(with: request.context.respond { work() }) }
                }))
    }

    /// Sends what `reply` gives: its response now, or a deferred one's when that is sent.
    func forward(_ reply: HTTPReply) {
        switch reply {
        case .response(let response):
            send(response)
        case .deferred(let inner):
            inner.attach(Delivery(deliver: { self.send($0) }, compute: { self.send(computing: $0) }))
        }
    }

    /// Waits for the response on the calling thread: for a caller that is not an HTTP server.
    func wait() -> HTTPResponse {
        wait(cancelledWhen: { false })!
    }

    /// ``wait()``, giving up (nil) once `isCancelled` returns true, which it asks every 50 ms.
    func wait(cancelledWhen isCancelled: () -> Bool) -> HTTPResponse? {
        let response = Mutex<HTTPResponse?>(nil)
        let sent = DispatchSemaphore(value: 0)
        let deliver: @Sendable (HTTPResponse) -> Void = { answer in
            response.withLock { $0 = answer }
            sent.signal()
        }
        attach(Delivery(deliver: deliver, compute: { work in Thread { deliver(work()) }.start() }))
        while sent.wait(timeout: .now() + .milliseconds(50)) == .timedOut {
            if isCancelled() { return nil }
        }
        return response.withLock { $0 }!
    }

    private func attach(_ delivery: Delivery) {
        let early: Stage = stage.withLock { stage in
            let was = stage
            if case .waiting(nil, nil) = stage {
                stage = .attached(delivery)
            } else {
                stage = .sent
            }
            return was
        }
        switch early {
        case .waiting(let response?, _): delivery.deliver(response)
        case .waiting(nil, let work?): delivery.compute(work)
        case .waiting(nil, nil), .attached, .sent: break
        }
    }
}

/// A request whose connection is suspended until its answer is left for the polling thread.
///
/// `@unchecked Sendable`: the connection pointer is used off the polling thread only for
/// `MHD_resume_connection`, which the manual declares safe at any time on a suspended connection;
/// libmicrohttpd keeps a suspended connection alive, and the server does not stop until every
/// suspended request has been resumed (``ServerContext/closeDispatch()``). `answer` and `context`
/// are `Sendable`.
struct SuspendedRequest: @unchecked Sendable {
    let connection: OpaquePointer
    let answer: HandlerAnswer
    let context: ServerContext

    /// Leaves `response` for the polling thread and resumes the connection, once.
    func resume(with response: HTTPResponse) {
        answer.leave(response)
        MHD_resume_connection(connection)
        context.endDispatch()
    }
}
