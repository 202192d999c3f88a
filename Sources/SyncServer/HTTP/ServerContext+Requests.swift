import CMicroHTTPD
import Foundation
import SyncProtocol
import Synchronization

/// The thread-specific marker set while a handler runs, so `stop()` called from a handler (which would
/// wait for itself) is caught.
let handlerThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

extension ServerContext {
    /// `MHD_OPTION_URI_LOG_CALLBACK`: the request line has arrived. The request's state is made
    /// here, with the target as sent, and becomes the access handler's `*req_cls`.
    func targetReceived(_ target: String, connection: OpaquePointer) -> UnsafeMutableRawPointer {
        let state = RequestState(
            target: target, watch: Self.watch(of: connection), maxBodyBytes: maxBodyBytes, budget: bodyBudget)
        return Unmanaged.passRetained(state).toOpaque()
    }

    /// The access handler's work (`MHD_AccessHandlerCallback`). libmicrohttpd calls it for a request:
    /// 1. once the headers are in (the state made from the request line has no head yet): what the
    ///    head alone decides (framing, size, coding, then the configuration's `admit`) is queued at
    ///    once, so a refused body is never read;
    /// 2. with `*uploadDataSize > 0` for each piece of body: counted and kept (or dropped once refused);
    ///    a response cannot be queued in this call (0.9.75 refuses it), so a refusal decided here waits for
    ///    the body's end, and a client that sends on far past the limit has its connection closed;
    /// 3. with `*uploadDataSize == 0` when the body is complete: the handler runs here, or, for a
    ///    request the configuration's `runsOffPollingThread` picks, on one of ``HandlerThreads`` with
    ///    the connection suspended (`MHD_suspend_connection`). A handler that answers later
    ///    (``HTTPReply/deferred(_:)``) has its connection suspended until it sends; either way the
    ///    answer is left in ``HandlerAnswer`` and the connection resumed (`MHD_resume_connection`,
    ///    safe from any thread);
    /// 4. once more when the connection is resumed: the response is queued, on the polling thread,
    ///    where nothing else touches the connection meanwhile.
    func access(
        connection: OpaquePointer, method: UnsafePointer<CChar>?, version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>,
        requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        // Set by targetReceived for every request: MHD calls it on each request line.
        guard let slot = requestSlot.pointee else { return .NO }
        let state = Unmanaged<RequestState>.fromOpaque(slot).takeUnretainedValue()
        guard state.head != nil else {
            state.isCountedInFlight = true
            requestsInFlight.add(1, ordering: .relaxed)
            state.watch?.headersArrived()
            let head = HTTPRequestHead(
                method: method.map { String(cString: $0) } ?? "", path: state.target.path,
                headers: HTTPHeaders(Self.values(of: .HEADER_KIND, on: connection).map { ($0.name, $0.value ?? "") }),
                remoteAddress: Self.clientAddress(of: connection))
            let refusal = state.begin(head, httpVersion: version.map { String(cString: $0) } ?? "", rules: rules)
            if let refusal {
                state.watch?.answering()
                requestRefused?(state.head!, refusal, state.nanosecondsSinceHead)
                return queue(refusal, for: state, on: connection)
            }
            return .YES
        }
        if uploadDataSize.pointee > 0 {
            let size = uploadDataSize.pointee
            let keepReading = state.receive(UnsafeRawBufferPointer(start: uploadData, count: size))
            state.watch?.bodyReceived(size)
            uploadDataSize.pointee = 0
            // MHD_NO closes the connection: the client went on sending far past a refusal.
            return keepReading ? .YES : .NO
        }
        if let answer = state.answer {
            // Resumed once the answer was left here; queued once.
            switch answer.take() {
            case .response(let response): return queue(response, for: state, on: connection)
            case .alreadyQueued: return .YES
            case .missing: return .NO
            }
        }
        state.watch?.answering()
        switch state.complete() {
        case .success(let request):
            if runsOffPollingThread(request), beginDispatch() {
                let suspended = suspend(connection, for: state)
                handlerThreads.run { [self] in
                    switch respond({ handler(request) }) {
                    case .response(let response): suspended.resume(with: response)
                    case .deferred(let later): later.attach(suspended)
                    }
                }
                return .YES
            }
            switch respond({ handler(request) }) {
            case .response(let response):
                return queue(response, for: state, on: connection)
            case .deferred(let later):
                guard beginDispatch() else {
                    // Stopping: no connection may be suspended now, and whatever `later` is sent is dropped.
                    return queue(
                        .error(.unavailable, "the server is stopping; retry shortly"), for: state, on: connection)
                }
                later.attach(suspend(connection, for: state))
                return .YES
            }
        case .failure(let refused):
            requestRefused?(state.head!, refused.response, state.nanosecondsSinceHead)
            return queue(refused.response, for: state, on: connection)
        }
    }

    /// Suspends the connection until its answer is left in the request's ``HandlerAnswer``.
    private func suspend(_ connection: OpaquePointer, for state: RequestState) -> SuspendedRequest {
        let answer = HandlerAnswer()
        state.answer = answer
        MHD_suspend_connection(connection)
        return SuspendedRequest(connection: connection, answer: answer, context: self)
    }

    /// `body`'s result, with the thread marked as a handler's while it runs.
    func respond<Result>(_ body: () -> Result) -> Result {
        pthread_setspecific(handlerThreadKey, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(handlerThreadKey, nil) }
        return body()
    }

    /// `MHD_CONNECTION_NOTIFY_STARTED`: the connection's deadlines start, kept in its socket context.
    func connectionOpened(_ connection: OpaquePointer, socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        openConnections.add(1, ordering: .relaxed)
        let watch = deadlines.opened(socket: cmhd_connection_socket(connection))
        socketContext.pointee = Unmanaged.passRetained(watch).toOpaque()
    }

    /// `MHD_CONNECTION_NOTIFY_CLOSED`, before libmicrohttpd closes the socket.
    func connectionClosed(socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        openConnections.subtract(1, ordering: .relaxed)
        guard let pointer = socketContext.pointee else { return }
        let watch = Unmanaged<WatchedConnection>.fromOpaque(pointer)
        deadlines.closed(watch.takeUnretainedValue())
        watch.release()
        socketContext.pointee = nil
    }

    /// The connection's ``WatchedConnection``, from its socket context.
    private static func watch(of connection: OpaquePointer) -> WatchedConnection? {
        guard let pointer = cmhd_connection_socket_context(connection) else { return nil }
        return Unmanaged<WatchedConnection>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// `MHD_OPTION_NOTIFY_COMPLETED`: releases the request's state.
    func requestCompleted(requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let slot = requestSlot.pointee else { return }
        let state = Unmanaged<RequestState>.fromOpaque(slot)
        let counted = state.takeUnretainedValue().isCountedInFlight
        state.takeUnretainedValue().watch?.requestEnded()
        state.release()
        requestSlot.pointee = nil
        if counted { requestsInFlight.subtract(1, ordering: .releasing) }
    }

    /// Hands `response` to libmicrohttpd (`MHD_queue_response`), compressed when the client accepts gzip.
    /// A header that cannot be sent (a line break in a value, a name that is not a token) turns it into a
    /// 500.
    private func queue(_ response: HTTPResponse, for state: RequestState, on connection: OpaquePointer) -> MHD_Result {
        let prepared = prepare(response, acceptEncoding: state.head?.headers["Accept-Encoding"])
        if let result = Self.submit(prepared, on: connection) {
            return result
        }
        log(
            "The handler's response for \(state.head?.method ?? "") \(state.target.path.prefix(200)) has a header that cannot be sent; sent 500."
        )
        let fallback = prepare(
            .error(.internalError, "The server built an invalid response."),
            acceptEncoding: nil)
        return Self.submit(fallback, on: connection) ?? .NO
    }

    /// The response as it goes on the wire: gzip when worth it, `Connection: close` while stopping.
    func prepare(_ response: HTTPResponse, acceptEncoding: String?) -> HTTPResponse {
        var response = response
        if !(100...999).contains(response.status.rawValue) {
            log("A handler answered the invalid status \(response.status); sent 500.")
            response = .error(.internalError, "The server built an invalid response.")
        }
        // libmicrohttpd writes these itself from the body it is given.
        response.headers.remove(name: "Content-Length")
        response.headers.remove(name: "Transfer-Encoding")
        if isStopping.load(ordering: .relaxed) {
            response.headers["Connection"] = "close"
        }
        guard response.body.count > compressionThreshold, !response.headers.contains("Content-Encoding") else {
            return response
        }
        if !response.headers.values(for: "Vary").contains(where: { $0.lowercased().contains("accept-encoding") }) {
            response.headers.add(name: "Vary", value: "Accept-Encoding")
        }
        guard Gzip.isAccepted(byAcceptEncoding: acceptEncoding), let compressed = Gzip.compress(response.body),
            compressed.count < response.body.count
        else {
            return response
        }
        response.body = compressed
        response.headers["Content-Encoding"] = "gzip"
        return response
    }

    /// `MHD_create_response_from_buffer` (copying the body), the headers, `MHD_queue_response`.
    /// `nil` when a header cannot be sent.
    private static func submit(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result? {
        guard let fields = response.headers.wireFields() else { return nil }
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        for field in fields {
            guard MHD_add_response_header(created, field.name, field.value) == .YES else { return nil }
        }
        return MHD_queue_response(connection, UInt32(response.status.rawValue), created)
    }

    /// The request's values of one kind (headers, query arguments), in order
    /// (`MHD_get_connection_values`).
    private static func values(of kind: MHD_ValueKind, on connection: OpaquePointer) -> [(
        name: String, value: String?
    )] {
        var pairs: [(name: String, value: String?)] = []
        withUnsafeMutablePointer(to: &pairs) { pointer in
            _ = MHD_get_connection_values(
                connection, kind,
                { cls, _, key, value in
                    let pairs = cls!.assumingMemoryBound(to: [(name: String, value: String?)].self)
                    pairs.pointee.append((key.map { String(cString: $0) } ?? "", value.map { String(cString: $0) }))
                    return .YES
                }, pointer)
        }
        return pairs
    }

    /// The client's IP address as text (`MHD_CONNECTION_INFO_CLIENT_ADDRESS`).
    private static func clientAddress(of connection: OpaquePointer) -> String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN) + 1) { buffer in
            guard cmhd_connection_client_address(connection, buffer.baseAddress, socklen_t(buffer.count)) == 0 else {
                return ""
            }
            return String(cString: buffer.baseAddress!)
        }
    }
}

/// The handler's response, left by its thread for the polling thread to queue once the connection
/// is resumed.
final class HandlerAnswer: Sendable {
    enum Taken {
        case response(HTTPResponse)
        /// Taken by an earlier call.
        case alreadyQueued
        /// Not left: never once the connection is resumed (the handler's thread leaves it first).
        case missing
    }

    private let state = Mutex<(response: HTTPResponse?, taken: Bool)>((nil, false))

    func leave(_ response: HTTPResponse) {
        state.withLock { $0.response = response }
    }

    func take() -> Taken {
        state.withLock { state in
            if state.taken { return .alreadyQueued }
            guard let response = state.response else { return .missing }
            state = (nil, true)
            return .response(response)
        }
    }
}
