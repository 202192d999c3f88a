import Foundation

extension HTTPClient {
    /// When an `HTTPClient` asks for compressed responses (`Accept-Encoding` with every coding
    /// this libcurl decodes, gzip among them) and decodes them.
    ///
    /// Compression trades CPU on both ends for bytes on the wire. To a server on this machine the
    /// bytes cost nothing to carry: there `unlessLoopback` (the default) asks for none, and the
    /// server's deflate and the client's inflate are CPU saved on both ends.
    ///
    /// ```swift
    /// var configuration = HTTPClient.Configuration()
    /// configuration.responseCompression = .always  // a server behind a local TLS-terminating proxy
    /// let client = try HTTPClient(configuration: configuration)
    /// ```
    ///
    /// See https://curl.se/libcurl/c/CURLOPT_ACCEPT_ENCODING.html.
    public enum ResponseCompression: Sendable, Hashable {
        /// Ask for compressed responses from every server.
        case always
        /// Ask for them unless the URL's host is a loopback name or address: `localhost` (and
        /// names under it, RFC 6761 §6.3), 127.0.0.0/8, `::1`, or an IPv4-mapped 127.x address.
        case unlessLoopback
        /// Never ask for them.
        case never

        /// Whether a request to `url` asks for compressed responses.
        public func asks(for url: URL) -> Bool {
            switch self {
            case .always: true
            case .never: false
            case .unlessLoopback: !Self.isLoopback(host: url.host)
            }
        }

        /// Whether `host` (as `URL.host` gives it, brackets around an IPv6 address or not) names
        /// this machine's loopback interface. Only names and addresses that always do: a name
        /// that merely resolves there (an `/etc/hosts` entry) is not looked up.
        public static func isLoopback(host: String?) -> Bool {
            guard var host = host?.lowercased(), !host.isEmpty else { return false }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.hasSuffix(".") { host.removeLast() }
            if host == "localhost" || host.hasSuffix(".localhost") { return true }
            var ipv4 = in_addr()
            if inet_pton(AF_INET, host, &ipv4) == 1 {
                return UInt32(bigEndian: ipv4.s_addr) >> 24 == 127
            }
            var ipv6 = in6_addr()
            guard inet_pton(AF_INET6, host, &ipv6) == 1 else { return false }
            let bytes = withUnsafeBytes(of: ipv6) { Array($0) }
            // ::1, and ::ffff:127.x.y.z (an IPv4 loopback address in IPv6 form).
            let isLoopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
            let isMappedLoopback =
                bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff && bytes[12] == 127
            return isLoopback || isMappedLoopback
        }
    }
}
