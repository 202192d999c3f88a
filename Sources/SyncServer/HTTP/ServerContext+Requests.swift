import CMicroHTTPD
import Foundation
import Synchronization

/// The thread-specific marker set while a handler runs, so `stop()` called from a handler (which would
/// wait for itself) is caught.
let handlerThreadKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()

extension ServerContext {
    /// The access handler's work (`MHD_AccessHandlerCallback`). libmicrohttpd calls it for a request:
    /// 1. with `*requestSlot == NULL` once the headers are in: the request's state is created, and a
    ///    refusal that the headers alone decide (a `Content-Length` over the limit) is queued at once, so
    ///    the body is never read;
    /// 2. with `*uploadDataSize > 0` for each piece of body: counted and kept (or dropped once refused);
    ///    a response cannot be queued in this call (0.9.75 refuses it), so a refusal decided here waits for
    ///    the body's end, and a client that sends on far past the limit has its connection closed;
    /// 3. with `*uploadDataSize == 0` when the body is complete: the handler runs here and its
    ///    response is queued, except for a request the configuration's `runsOffPollingThread` picks:
    ///    its connection is suspended (`MHD_suspend_connection`) and the handler runs on one of
    ///    ``HandlerThreads``, which keeps its response and resumes the connection
    ///    (`MHD_resume_connection`, safe from any thread), so a handler that blocks holds up no other
    ///    connection;
    /// 4. once more when the connection is resumed: the response is queued, on the polling thread,
    ///    where nothing else touches the connection meanwhile (the handler's thread calls nothing of
    ///    libmicrohttpd's but the resume).
    func access(
        connection: OpaquePointer, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>,
        requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let slot = requestSlot.pointee else {
            let state = RequestState(
                method: method.map { String(cString: $0) } ?? "",
                path: url.map { String(cString: $0) } ?? "/",
                queryItems: Self.values(of: .GET_ARGUMENT_KIND, on: connection).map {
                    URLQueryItem(name: $0.name, value: $0.value)
                },
                headers: HTTPHeaders(Self.values(of: .HEADER_KIND, on: connection).map { ($0.name, $0.value ?? "") }),
                remoteAddress: Self.clientAddress(of: connection),
                maxBodyBytes: maxBodyBytes)
            requestSlot.pointee = Unmanaged.passRetained(state).toOpaque()
            requestsInFlight.add(1, ordering: .relaxed)
            if let refusal = state.refusal {
                return queue(refusal, for: state, on: connection)
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(slot).takeUnretainedValue()
        if uploadDataSize.pointee > 0 {
            let keepReading = state.receive(UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee))
            uploadDataSize.pointee = 0
            // MHD_NO closes the connection: the client went on sending far past a refusal.
            return keepReading ? .YES : .NO
        }
        if let answer = state.answer {
            // Resumed by the handler's thread, which left the response here; queued once.
            switch answer.take() {
            case .response(let response): return queue(response, for: state, on: connection)
            case .alreadyQueued: return .YES
            case .missing: return .NO
            }
        }
        switch state.complete() {
        case .success(let request):
            guard runsOffPollingThread(request), beginDispatch() else {
                // A request that waits for no other, or the server is stopping: run here (where
                // MHD_stop_daemon waits for it).
                return queue(respond(to: request), for: state, on: connection)
            }
            let answer = HandlerAnswer()
            state.answer = answer
            let suspended = SuspendedConnection(connection: connection)
            MHD_suspend_connection(connection)
            handlerThreads.run { [self] in
                let response = respond(to: request)
                answer.leave(response)
                MHD_resume_connection(suspended.connection)
                endDispatch()
            }
            return .YES
        case .failure(let refused):
            return queue(refused.response, for: state, on: connection)
        }
    }

    /// The handler's response, with the thread marked as a handler's while it runs.
    private func respond(to request: HTTPRequest) -> HTTPResponse {
        pthread_setspecific(handlerThreadKey, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(handlerThreadKey, nil) }
        return handler(request)
    }

    /// `MHD_OPTION_NOTIFY_COMPLETED`: releases the request's state.
    func requestCompleted(requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard let slot = requestSlot.pointee else { return }
        Unmanaged<RequestState>.fromOpaque(slot).release()
        requestSlot.pointee = nil
        requestsInFlight.subtract(1, ordering: .releasing)
    }

    /// Hands `response` to libmicrohttpd (`MHD_queue_response`), compressed when the client accepts gzip.
    /// A header that cannot be sent (a line break in a value, a name that is not a token) turns it into a
    /// 500.
    private func queue(_ response: HTTPResponse, for state: RequestState, on connection: OpaquePointer) -> MHD_Result {
        let prepared = prepare(response, acceptEncoding: state.headers["Accept-Encoding"])
        if let result = Self.submit(prepared, on: connection) {
            return result
        }
        log("The handler's response for \(state.method) \(state.path) has a header that cannot be sent; sent 500.")
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

/// A connection suspended while its handler runs on another thread.
///
/// `@unchecked Sendable`: the pointer is used on that thread only for `MHD_resume_connection`, which
/// the manual declares safe "at any time" on a suspended connection; libmicrohttpd keeps the
/// connection alive while it is suspended (and the server does not stop until every handler has
/// resumed its connection).
struct SuspendedConnection: @unchecked Sendable {
    let connection: OpaquePointer
}
