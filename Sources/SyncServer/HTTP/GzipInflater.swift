import CZlib
import Foundation

/// A streaming gzip decompressor with a bound on its output, for request bodies sent with
/// `Content-Encoding: gzip`.
///
/// Compressed bytes are fed as they arrive; decompressed bytes are appended to the caller's buffer in
/// 64 KiB steps and the bound is checked before each append, so a small body that inflates to gigabytes
/// (a "zip bomb") costs at most `limit` plus one step of memory. Concatenated gzip members are accepted
/// (RFC 1952 §2.2). zlib manual: https://zlib.net/manual.html#Advanced (`inflateInit2`, `inflate`).
///
/// Not `Sendable`: one request's state, used by the libmicrohttpd thread serving that connection.
final class GzipInflater {
    enum Failure: Error, Equatable {
        /// The decompressed body would exceed the limit.
        case tooLarge
        /// The bytes are not a valid gzip stream (bad header, corrupt data, CRC mismatch).
        case invalid(String)
        /// The stream ended before its trailer.
        case truncated
    }

    private let stream: UnsafeMutablePointer<z_stream>
    /// Where each step is decompressed before it is appended to the caller's buffer.
    private let chunk: UnsafeMutableBufferPointer<Bytef>
    private let limit: Int
    /// Whether the current member has reached its trailer (`Z_STREAM_END`).
    private var atMemberEnd = false
    private static let step = 64 * 1024

    init(limit: Int) throws(Failure) {
        // Set up zlib before storing anything, so a failure leaves no half-built object for deinit.
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard czlib_inflate_init_gzip(stream) == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw .invalid("zlib could not start a decompressor")
        }
        self.limit = limit
        self.stream = stream
        self.chunk = .allocate(capacity: Self.step)
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        chunk.deallocate()
    }

    /// Decompresses `input` and appends the result to `output`, which must stay within the limit.
    func append(_ input: UnsafeRawBufferPointer, to output: inout Data) throws(Failure) {
        guard let base = input.baseAddress, !input.isEmpty else { return }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        defer {
            stream.pointee.next_in = nil
            stream.pointee.avail_in = 0
        }
        while stream.pointee.avail_in > 0 {
            if atMemberEnd {
                // Another gzip member follows the one that ended.
                guard inflateReset(stream) == Z_OK else { throw .invalid("zlib could not restart") }
                atMemberEnd = false
            }
            let (status, produced) = inflateStep()
            switch status {
            case Z_OK, Z_BUF_ERROR:
                break
            case Z_STREAM_END:
                atMemberEnd = true
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .invalid(message)
            }
            guard output.count + produced <= limit else { throw .tooLarge }
            output.append(chunk.baseAddress!, count: produced)
            if status == Z_BUF_ERROR && produced == 0 {
                break  // needs more input than this call has
            }
        }
        // Output may still be pending inside zlib with no input left: drain it.
        while !atMemberEnd {
            let (status, produced) = inflateStep()
            guard status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR else {
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .invalid(message)
            }
            guard output.count + produced <= limit else { throw .tooLarge }
            output.append(chunk.baseAddress!, count: produced)
            if status == Z_STREAM_END { atMemberEnd = true }
            if produced == 0 { break }
        }
    }

    /// One `inflate` call into `chunk`: its status and how many bytes it produced.
    private func inflateStep() -> (status: Int32, produced: Int) {
        stream.pointee.next_out = chunk.baseAddress
        stream.pointee.avail_out = uInt(chunk.count)
        let status = inflate(stream, Z_NO_FLUSH)
        return (status, chunk.count - Int(stream.pointee.avail_out))
    }

    /// Checks that the stream ended with a complete member.
    func finish() throws(Failure) {
        guard atMemberEnd else { throw .truncated }
    }
}
