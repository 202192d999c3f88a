import CMicroHTTPD
import Foundation

// The C callbacks given to MHD_start_daemon. They run on libmicrohttpd's worker threads, so they are
// plain non-isolated functions that capture nothing; their `cls` is the `ServerContext`, passed
// unretained (the server keeps it alive until MHD_stop_daemon has returned).
// Manual, "microhttpd-cb": https://www.gnu.org/software/libmicrohttpd/manual/libmicrohttpd.html#microhttpd_002dcb

/// `MHD_AccessHandlerCallback`: called when a request's headers have arrived, once per piece of body,
/// and once more when the body is complete.
func mhdAccessHandler(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ url: UnsafePointer<CChar>?,
    _ method: UnsafePointer<CChar>?, _ version: UnsafePointer<CChar>?, _ uploadData: UnsafePointer<CChar>?,
    _ uploadDataSize: UnsafeMutablePointer<Int>?, _ requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
) -> MHD_Result {
    guard let cls, let connection, let uploadDataSize, let requestSlot else { return .NO }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    return context.access(
        connection: connection, method: method, version: version, uploadData: uploadData,
        uploadDataSize: uploadDataSize, requestSlot: requestSlot)
}

/// `MHD_RequestCompletedCallback` (`MHD_OPTION_NOTIFY_COMPLETED`): the request's response was sent, or
/// the request ended early (error, timeout, shutdown).
func mhdRequestCompleted(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ requestSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ reason: MHD_RequestTerminationCode
) {
    guard let cls, let requestSlot else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.requestCompleted(requestSlot: requestSlot)
}

/// `MHD_NotifyConnectionCallback` (`MHD_OPTION_NOTIFY_CONNECTION`): a connection opened or closed.
func mhdConnectionNotify(
    _ cls: UnsafeMutableRawPointer?, _ connection: OpaquePointer?,
    _ socketContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, _ code: MHD_ConnectionNotificationCode
) {
    guard let cls, let connection, let socketContext else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED:
        context.connectionOpened(connection, socketContext: socketContext)
    case .CONNECTION_NOTIFY_CLOSED:
        context.connectionClosed(socketContext: socketContext)
    }
}

/// The `cmhd_target_sink` of `MHD_OPTION_URI_LOG_CALLBACK`: a request line has arrived.
func mhdTargetReceived(
    _ cls: UnsafeMutableRawPointer?, _ target: UnsafePointer<CChar>?, _ connection: OpaquePointer?
) -> UnsafeMutableRawPointer? {
    guard let cls, let connection else { return nil }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    return context.targetReceived(target.map { String(cString: $0) } ?? "/", connection: connection)
}

/// The `cmhd_logger` sink: one formatted line of libmicrohttpd's log.
func mhdLog(_ cls: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let cls, let message else { return }
    let context = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    context.log(String(cString: message))
}
