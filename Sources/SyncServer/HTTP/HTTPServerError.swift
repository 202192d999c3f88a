/// Why an `HTTPServer` could not start. Each case's `description` says what to do about it.
///
/// ```swift
/// do {
///     server = try HTTPServer(configuration: .init(port: 8080), handler: handle)
/// } catch .addressInUse(let address, let port) {
///     print("\(address):\(port) is taken; pick another port or stop the other server")
/// } catch {
///     print(error)
/// }
/// ```
///
/// libmicrohttpd reports failures of `MHD_start_daemon` only through its error log, which the server
/// captures into `startFailed`; see the manual, "microhttpd-init"
/// (https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dinit).
public enum HTTPServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A configuration value is out of range; the message names it.
    case invalidConfiguration(String)
    /// `address` is not an IPv4 or IPv6 literal.
    case invalidAddress(String)
    /// Another socket is bound to the address and port.
    case addressInUse(address: String, port: UInt16)
    /// The process may not bind the port (ports below 1024 need privileges).
    case permissionDenied(address: String, port: UInt16)
    /// The address is not one of this machine's.
    case addressNotAvailable(address: String)
    /// TLS was configured but this libmicrohttpd was built without it (`.FEATURE_TLS`).
    case tlsUnavailable
    /// A certificate or key file could not be read.
    case tlsFileUnreadable(path: String, reason: String)
    /// libmicrohttpd (GnuTLS) refused the certificate or key; the message is its own.
    case tlsRejected(String)
    /// libmicrohttpd could not start for another reason; the message is its log.
    case startFailed(String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let message):
            return "Invalid HTTP server configuration: \(message)"
        case .invalidAddress(let address):
            return "'\(address)' is not an IP address. Give an IPv4 or IPv6 literal such as 127.0.0.1, 0.0.0.0 or ::1."
        case .addressInUse(let address, let port):
            return
                "\(address) port \(port) is already in use by another program. Stop it, choose another port, "
                + "or use port 0 to let the system pick a free one."
        case .permissionDenied(let address, let port):
            return
                "Not allowed to listen on \(address) port \(port). Ports below 1024 need root or "
                + "CAP_NET_BIND_SERVICE; choose a port of 1024 or above."
        case .addressNotAvailable(let address):
            return
                "\(address) is not an address of this machine. Use 127.0.0.1 for local use, 0.0.0.0 (or ::) "
                + "for every interface, or one of the addresses `ip addr` shows."
        case .tlsUnavailable:
            return
                "TLS was configured but this libmicrohttpd was built without TLS support. Install Debian's "
                + "libmicrohttpd12 (built with GnuTLS) or serve plain HTTP behind a TLS proxy."
        case .tlsFileUnreadable(let path, let reason):
            return "Cannot read the TLS file \(path): \(reason). Check the path and that this user may read it."
        case .tlsRejected(let message):
            return
                "The TLS certificate or key was refused (\(message)). Give a PEM certificate and the matching "
                + "unencrypted PEM private key."
        case .startFailed(let message):
            return "The HTTP server could not start: \(message)"
        }
    }
}
