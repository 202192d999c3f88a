import CZlib
import Foundation

/// One-shot gzip compression for response bodies, and the `Accept-Encoding` test that decides when to
/// use it. zlib manual: https://zlib.net/manual.html#Advanced (`deflateInit2`, `deflateBound`).
enum Gzip {
    /// `data` as one gzip member, or `nil` if zlib fails (the caller then sends the body as it is).
    ///
    /// Level 1 by default: on a pull page of canonical JSON zlib's default level 6 takes about three
    /// times as long for a slightly smaller result, most of the server's CPU per pulled change, and
    /// the few more bytes of level 1 cost less to send than the deflate time saved.
    static func compress(_ data: Data, level: Int32 = 1) -> Data? {
        var stream = z_stream()
        guard czlib_deflate_init_gzip(&stream, level) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(data.count)))
        var status = Z_OK
        // Uninitialized: zeroing the bound (more than the whole body) cost more than copying
        // out the compressed bytes.
        let output = [UInt8](unsafeUninitializedCapacity: bound) { out, written in
            status = data.withUnsafeBytes { input in
                stream.next_in = UnsafeMutablePointer(
                    mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
            written = status == Z_STREAM_END ? Int(stream.total_out) : 0
        }
        guard status == Z_STREAM_END else { return nil }
        return Data(output)
    }

    /// Whether an `Accept-Encoding` value allows gzip: `gzip` or `x-gzip` listed with a non-zero
    /// weight, or `*` with a non-zero weight and gzip not refused (RFC 9110 §12.5.3).
    static func isAccepted(byAcceptEncoding value: String?) -> Bool {
        guard let value else { return false }
        var gzipWeight: Double?
        var wildcardWeight: Double?
        for item in value.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let coding = parts.first?.lowercased(), !coding.isEmpty else { continue }
            var weight = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                if pair.count == 2, pair[0].lowercased() == "q" {
                    weight = Double(pair[1]) ?? 0
                }
            }
            switch coding {
            case "gzip", "x-gzip": gzipWeight = weight
            case "*": wildcardWeight = weight
            default: break
            }
        }
        if let gzipWeight { return gzipWeight > 0 }
        if let wildcardWeight { return wildcardWeight > 0 }
        return false
    }
}
