#ifndef OFFLINESTORE_CZLIB_SHIM_H
#define OFFLINESTORE_CZLIB_SHIM_H

#include <zlib.h>

// deflateInit2 and inflateInit2 are macros (they pass zlib's version and the
// size of z_stream to deflateInit2_/inflateInit2_), which Swift cannot call.
// Manual: https://zlib.net/manual.html#Advanced

/// deflateInit2 for a gzip stream (windowBits 15 + 16: gzip header and trailer).
static inline int czlib_deflate_init_gzip(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

/// inflateInit2 for a gzip stream (windowBits 15 + 16: gzip only, the trailer's
/// CRC-32 and length are checked).
static inline int czlib_inflate_init_gzip(z_stream *stream) {
    return inflateInit2(stream, 15 + 16);
}

#endif
