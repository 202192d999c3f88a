import Foundation

/// One request while libmicrohttpd delivers it: what the headers said, the body received so far, and the
/// refusal decided on the way, if any. Lives in the access handler's `*req_cls` from the first call
/// (headers received) to `MHD_OPTION_NOTIFY_COMPLETED`.
///
/// Not `Sendable` and needs no lock: libmicrohttpd serves a connection on one thread and calls its
/// access handler and completion callback one at a time, so one request's state is never touched by
/// two threads at once. See the manual, "microhttpd-cb"
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dcb).
final class RequestState {
    let method: String
    let path: String
    let queryItems: [URLQueryItem]
    let headers: HTTPHeaders
    let remoteAddress: String
    private let maxBodyBytes: Int
    /// The body so far, decompressed when `inflater` is set; never more than `maxBodyBytes`.
    private(set) var body = Data()
    /// Bytes received as sent (compressed, when they are), counted against `maxBodyBytes` as well.
    private(set) var receivedBytes = 0
    private var inflater: GzipInflater?
    /// The answer decided before the handler ran: once set, further body bytes are counted and dropped.
    private(set) var refusal: HTTPResponse?
    /// Set when the handler is handed the request, so it runs once.
    var answer: HandlerAnswer?

    init(
        method: String, path: String, queryItems: [URLQueryItem], headers: HTTPHeaders, remoteAddress: String,
        maxBodyBytes: Int
    ) {
        self.method = method
        self.path = path
        self.queryItems = queryItems
        self.headers = headers
        self.remoteAddress = remoteAddress
        self.maxBodyBytes = maxBodyBytes
        refusal = checkHeaders()
    }

    /// What the headers alone decide: a `Content-Length` over the limit, an encoding we cannot undo.
    private func checkHeaders() -> HTTPResponse? {
        if let text = headers["Content-Length"], let declared = UInt64(text.trimmingCharacters(in: .whitespaces)) {
            if declared > UInt64(maxBodyBytes) {
                return Self.tooLarge(limit: maxBodyBytes, declared: declared)
            }
            // Reserve for the declared size, up to 64 KiB: a client that claims much and sends little
            // must not cost more than what it sends.
            body.reserveCapacity(min(Int(declared), 64 * 1024))
        }
        let codings =
            headers.values(for: "Content-Encoding")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
        switch codings {
        case []:
            return nil
        case ["gzip"], ["x-gzip"]:
            do {
                inflater = try GzipInflater(limit: maxBodyBytes)
                body = Data()
                return nil
            } catch {
                return .error(.internalError, "The server could not start zlib.")
            }
        default:
            return .error(
                .unsupportedContentEncoding,
                "The body's Content-Encoding '\(codings.joined(separator: ", "))' is not supported. "
                    + "Send it uncompressed or with Content-Encoding: gzip.")
        }
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
        } else {
            body.append(bytes.assumingMemoryBound(to: UInt8.self))
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
        let request = HTTPRequest(
            method: method, path: path, queryItems: queryItems, headers: headers, body: body,
            remoteAddress: remoteAddress)
        body = Data()
        return .success(request)
    }

    private func refuse(_ response: HTTPResponse) {
        refusal = response
        body = Data()
        inflater = nil
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
