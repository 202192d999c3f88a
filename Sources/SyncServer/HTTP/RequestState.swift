import Foundation
import SyncProtocol

/// One request while libmicrohttpd delivers it: what the headers said, the body received so far, and the
/// refusal decided on the way, if any. Made when the request line arrives (`MHD_OPTION_URI_LOG_CALLBACK`),
/// it lives in the access handler's `*req_cls` until `MHD_OPTION_NOTIFY_COMPLETED`, and holds its
/// share of the server's ``BodyBudget`` until then.
///
/// Not `Sendable` and needs no lock: libmicrohttpd serves a connection on one thread and calls its
/// access handler and completion callback one at a time, so one request's state is never touched by
/// two threads at once. See the manual, "microhttpd-cb"
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dcb).
final class RequestState {
    let target: HTTPRequestTarget
    /// The connection's deadlines, told of the request's progress.
    let watch: WatchedConnection?
    /// What the headers said; `nil` until they have arrived (the state is made from the request line).
    private(set) var head: HTTPRequestHead?
    /// When the headers arrived (`DispatchTime` nanoseconds).
    private var headArrived: UInt64 = 0
    /// What ``HTTPServer/Configuration/admit`` noted about the request.
    private(set) var admissionNote: (any Sendable)?
    private let maxBodyBytes: Int
    private let budget: BodyBudget
    /// Bytes of ``budget`` this request holds: at least what ``body`` holds.
    private var reservedBytes = 0
    /// The share of ``budget`` those bytes count in (``HTTPAdmission/admit(note:budgetShare:)``).
    private var budgetShare: String?
    /// The body so far, decompressed when `inflater` is set; never more than `maxBodyBytes`.
    private(set) var body = Data()
    /// Bytes received as sent (compressed, when they are), counted against `maxBodyBytes` as well.
    private(set) var receivedBytes = 0
    private var inflater: GzipInflater?
    /// The answer decided before the handler ran: once set, further body bytes are counted and dropped.
    private(set) var refusal: HTTPResponse?
    /// Set when the handler is handed the request, so it runs once.
    var answer: HandlerAnswer?
    /// Whether the request is counted in ``ServerContext/requestsInFlight`` (from its headers on).
    var isCountedInFlight = false

    init(target: String, watch: WatchedConnection?, maxBodyBytes: Int, budget: BodyBudget) {
        self.target = HTTPRequestTarget(target)
        self.watch = watch
        self.maxBodyBytes = maxBodyBytes
        self.budget = budget
    }

    deinit {
        budget.release(reservedBytes, share: budgetShare)
    }

    var nanosecondsSinceHead: UInt64 { DispatchTime.now().uptimeNanoseconds - headArrived }

    /// Takes the request's headers and decides what they alone decide, in the protocol's order
    /// (Protocol/README.md, section 4): the framing, the query, the declared size and the content
    /// coding, then `admit` (route, token, content type), then the body's share of the budget.
    /// Returns the refusal to send at once, before any of the body is read.
    func begin(_ head: HTTPRequestHead, httpVersion: String, rules: RequestRules) -> HTTPResponse? {
        self.head = head
        headArrived = DispatchTime.now().uptimeNanoseconds
        refusal = checkHead(head, httpVersion: httpVersion, rules: rules)
        return refusal
    }

    private func checkHead(_ head: HTTPRequestHead, httpVersion: String, rules: RequestRules) -> HTTPResponse? {
        if let refusal = RequestFraming.refusal(
            of: head, httpVersion: httpVersion, maxHeaderFields: rules.maxHeaderFields)
        {
            return refusal
        }
        guard let items = target.queryItems(limit: rules.maxQueryItems) else {
            return .error(
                .uriTooLong, "the request target has more than \(rules.maxQueryItems) query parameters")
        }
        self.head?.queryItems = items
        let declared = head.headers["Content-Length"].flatMap { UInt64($0) }
        if let declared, declared > UInt64(maxBodyBytes) {
            return Self.tooLarge(limit: maxBodyBytes, declared: declared)
        }
        if rules.requiresContentLength, head.headers.contains("Transfer-Encoding") {
            var response = HTTPResponse.error(
                .lengthRequired, "send the body with a Content-Length; this server does not read chunked bodies")
            response.headers["Connection"] = "close"
            return response
        }
        let codings =
            head.headers.values(for: "Content-Encoding")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        guard codings.isEmpty || codings == ["gzip"] else {
            return .error(
                .unsupportedContentEncoding,
                "The body's Content-Encoding '\(codings.joined(separator: ", ").prefix(64))' is not supported. "
                    + "Send it uncompressed or with Content-Encoding: gzip.")
        }
        switch rules.admit(self.head!) {
        case .refuse(let response):
            return response
        case .admit(let note, let share):
            admissionNote = note
            budgetShare = share
        }
        if let declared, declared > 0 {
            // A plain body of a declared length never grows past it: exactly that is reserved, so
            // requests that wait long for their answer (live pulls) hold no more than they sent.
            guard reserve(Int(declared), exactly: codings.isEmpty) else { return budgetSpent() }
            // A client that claims much and sends little costs what it sends; the reservation holds
            // its place in the budget.
            body.reserveCapacity(min(Int(declared), 64 * 1024))
        }
        if codings == ["gzip"] {
            do {
                inflater = try GzipInflater(limit: maxBodyBytes)
            } catch {
                return .error(.internalError, "The server could not start zlib.")
            }
        }
        return nil
    }

    /// Grows this request's reservation to `bytes` (`exactly`, or with room for a body that grows
    /// in steps); `false` when the budget cannot hold it.
    private func reserve(_ bytes: Int, exactly: Bool = false) -> Bool {
        guard bytes > reservedBytes else { return true }
        if exactly {
            guard budget.reserve(bytes - reservedBytes, share: budgetShare) else { return false }
            reservedBytes = bytes
            return true
        }
        // Chunked and compressed bodies grow in steps, not a reservation per piece.
        let wanted = max(bytes, min(maxBodyBytes, reservedBytes + 256 * 1024))
        if budget.reserve(wanted - reservedBytes, share: budgetShare) {
            reservedBytes = wanted
            return true
        }
        if budget.reserve(bytes - reservedBytes, share: budgetShare) {
            reservedBytes = bytes
            return true
        }
        return false
    }

    private func budgetSpent() -> HTTPResponse {
        .error(
            .unavailable,
            "the server is receiving as many request bodies as its memory budget holds (\(budget.capacity) bytes "
                + "in all, \(budget.perShare) for one token); retry after the Retry-After seconds")
    }

    /// Takes one piece of the body as it arrives. Past the limit the body is dropped and the request
    /// refused; nothing more is kept.
    ///
    /// libmicrohttpd 0.9.75 cannot queue a response while it delivers body data (`MHD_queue_response`
    /// returns `MHD_NO` then), so the refusal is sent when the body ends and the bytes in between are read
    /// and dropped. Returns `false` once the client has sent more than `discardAllowance` past the limit:
    /// the caller then closes the connection instead of reading on.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        receivedBytes += bytes.count
        guard refusal == nil else {
            return receivedBytes - maxBodyBytes <= discardAllowance
        }
        guard receivedBytes <= maxBodyBytes else {
            refuse(Self.tooLarge(limit: maxBodyBytes, declared: nil))
            return receivedBytes - maxBodyBytes <= discardAllowance
        }
        if let inflater {
            do {
                try inflater.append(bytes, to: &body)
            } catch .tooLarge {
                refuse(Self.tooLarge(limit: maxBodyBytes, declared: nil, decompressed: true))
            } catch {
                refuse(Self.badGzip(error))
            }
            // An inflated body is counted once it has grown.
            if refusal == nil, !reserve(body.count) { refuse(budgetSpent()) }
        } else if reserve(body.count + bytes.count) {
            body.append(bytes.assumingMemoryBound(to: UInt8.self))
        } else {
            refuse(budgetSpent())
        }
        return true
    }

    /// How many bytes past `maxBodyBytes` are read and dropped so the client can still be answered 413:
    /// as many again as the limit, at least 64 KiB.
    var discardAllowance: Int { max(maxBodyBytes, 64 * 1024) }

    /// The complete request once the body has arrived, or the refusal decided on the way.
    func complete() -> Result<HTTPRequest, RefusedRequest> {
        if let refusal { return .failure(RefusedRequest(response: refusal)) }
        if let inflater {
            do {
                try inflater.finish()
            } catch {
                refuse(Self.badGzip(error))
                return .failure(RefusedRequest(response: refusal!))
            }
        }
        let head = head!
        var request = HTTPRequest(
            method: head.method, path: head.path, queryItems: head.queryItems, headers: head.headers, body: body,
            remoteAddress: head.remoteAddress)
        request.admissionNote = admissionNote
        body = Data()
        return .success(request)
    }

    private func refuse(_ response: HTTPResponse) {
        refusal = response
        body = Data()
        inflater = nil
        budget.release(reservedBytes, share: budgetShare)
        reservedBytes = 0
    }

    static func tooLarge(limit: Int, declared: UInt64?, decompressed: Bool = false) -> HTTPResponse {
        let what =
            if let declared {
                "The request body of \(declared) bytes"
            } else if decompressed {
                "The request body, decompressed,"
            } else {
                "The request body"
            }
        return .error(
            .bodyTooLarge,
            "\(what) is larger than this server's limit of \(limit) bytes. Send it in smaller parts.")
    }

    private static func badGzip(_ failure: GzipInflater.Failure) -> HTTPResponse {
        let detail =
            switch failure {
            case .invalid(let message): message
            case .truncated: "the stream ends early"
            case .tooLarge: "too large"
            }
        return .error(
            .invalidBodyEncoding,
            "The body is marked Content-Encoding: gzip but is not valid gzip (\(detail)).")
    }
}

/// A request answered without calling the handler; carries the response to send.
struct RefusedRequest: Error {
    let response: HTTPResponse
}
