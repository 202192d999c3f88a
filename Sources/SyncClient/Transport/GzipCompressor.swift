import CZlib
import Foundation

/// One-shot gzip compression of request bodies (zlib's `deflate` with a gzip header and trailer).
/// zlib manual: https://zlib.net/manual.html#Advanced (`deflateInit2`, `deflateBound`).
enum GzipCompressor {
    /// `data` as one gzip member, or nil when zlib fails.
    static func compress(_ data: Data, level: Int32 = 6) -> Data? {
        guard data.count <= Int(UInt32.max) else { return nil }  // avail_in is 32 bits
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))))
        let status = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress?.assumingMemoryBound(to: Bytef.self)
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.count = Int(stream.total_out)
        return output
    }
}
