import SyncProtocol

/// The HTTP layer's own checks of a request's head, made before any handler sees it: what RFC 9112
/// says a server must refuse, and the fields a server must not have to choose between. A proxy in
/// front may read an ambiguous request differently from libmicrohttpd (which takes the first of two
/// `Content-Length` fields, and keeps a connection open after `Transfer-Encoding` beside
/// `Content-Length`), so each is refused with `400 malformed_request` and the connection closed.
///
/// ```swift
/// if let refusal = RequestFraming.refusal(of: head, httpVersion: "HTTP/1.1", maxHeaderFields: 100) { … }
/// ```
enum RequestFraming {
    /// Fields whose second copy would leave the server choosing between two meanings.
    static let singleFields = [
        "Host", "Content-Length", "Transfer-Encoding", "Authorization", "Content-Type", "Content-Encoding",
    ]

    static func refusal(of head: HTTPRequestHead, httpVersion: String, maxHeaderFields: Int) -> HTTPResponse? {
        let headers = head.headers
        guard headers.count <= maxHeaderFields else {
            return .error(
                .headersTooLarge,
                "the request has \(headers.count) header fields; this server reads at most \(maxHeaderFields)")
        }
        if let field = headers.first(where: { !HTTPHeaders.isToken($0.name) }) {
            return malformed(
                "the header name \(quoted(field.name)) is not a token (no spaces, no separators; "
                    + "RFC 9110, section 5.1)")
        }
        for name in singleFields {
            let count = headers.values(for: name).count
            if count > 1 { return malformed("the request has \(count) \(name) fields; send exactly one") }
        }
        if httpVersion == "HTTP/1.1", !headers.contains("Host") {
            return malformed("an HTTP/1.1 request needs a Host field (RFC 9112, section 3.2)")
        }
        if let coding = headers["Transfer-Encoding"] {
            guard headers["Content-Length"] == nil else {
                return malformed(
                    "the request has both Transfer-Encoding and Content-Length; send one (RFC 9112, section 6.1)")
            }
            guard coding.trimmingCharacters(in: .whitespaces).lowercased() == "chunked" else {
                return malformed(
                    "Transfer-Encoding \(quoted(coding)) is not supported; send chunked or a Content-Length")
            }
        }
        if let length = headers["Content-Length"], length.isEmpty || !length.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            return malformed("Content-Length \(quoted(length)) is not a number of bytes (RFC 9112, section 6.3)")
        }
        return nil
    }

    private static func malformed(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(.malformedRequest, message)
        response.headers["Connection"] = "close"
        return response
    }

    /// At most 64 characters of `text`, quoted, so a hostile header cannot fill the answer.
    private static func quoted(_ text: String) -> String {
        "'\(text.prefix(64))'"
    }
}
