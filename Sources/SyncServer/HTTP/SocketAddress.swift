import Foundation

/// An IPv4 or IPv6 address and port in the `sockaddr` form `MHD_OPTION_SOCK_ADDR` takes.
struct SocketAddress {
    private(set) var storage = sockaddr_storage()
    let isIPv6: Bool

    /// `nil` when `address` is not an IPv4 or IPv6 literal.
    init?(address: String, port: UInt16) {
        var storage = sockaddr_storage()
        let parsed = withUnsafeMutableBytes(of: &storage) { raw -> Bool? in
            var v4 = in_addr()
            if inet_pton(AF_INET, address, &v4) == 1 {
                var socket = sockaddr_in()
                socket.sin_family = sa_family_t(AF_INET)
                socket.sin_port = port.bigEndian
                socket.sin_addr = v4
                raw.storeBytes(of: socket, as: sockaddr_in.self)
                return false
            }
            var v6 = in6_addr()
            if inet_pton(AF_INET6, address, &v6) == 1 {
                var socket = sockaddr_in6()
                socket.sin6_family = sa_family_t(AF_INET6)
                socket.sin6_port = port.bigEndian
                socket.sin6_addr = v6
                raw.storeBytes(of: socket, as: sockaddr_in6.self)
                return true
            }
            return nil
        }
        guard let parsed else { return nil }
        self.storage = storage
        self.isIPv6 = parsed
    }
}
