import Foundation

/// The request line's target split into its path and query, as the client sent it.
///
/// libmicrohttpd is given an empty query and no percent-decoding (see `cmhd_target_trampoline`
/// and `cmhd_unescape_nothing` in the CMicroHTTPD shim): the query is parsed here, up to a limit,
/// and the path stays encoded, so no `%2F` turns into a separator behind a proxy's back.
struct HTTPRequestTarget {
    let path: String
    let query: Substring?

    init(_ target: String) {
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            query = target[target.index(after: mark)...]
        } else {
            path = target
            query = nil
        }
    }

    /// The query's items, or `nil` when there are more than `limit`.
    func queryItems(limit: Int) -> [URLQueryItem]? {
        guard let query, !query.isEmpty else { return [] }
        let pieces = query.split(separator: "&", omittingEmptySubsequences: true)
        guard pieces.count <= limit else { return nil }
        return pieces.map { piece in
            let parts = piece.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(parts[0])
            return URLQueryItem(name: name, value: parts.count > 1 ? Self.decode(parts[1]) : nil)
        }
    }

    /// `+` as a space, then `%HH` escapes; text that is not valid after decoding stays as sent.
    private static func decode(_ text: Substring) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
