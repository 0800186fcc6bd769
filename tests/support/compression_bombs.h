#pragma once
// Compressed payloads that inflate far past any limit, made with the
// libraries themselves: the smallest each format allows. zstd's ratio is
// capped near 32768:1 (an RLE block takes 4 bytes per 128 KiB), so 1 GiB
// takes about 32 KiB; deflate's near 1032:1 (258 bytes per 2-bit match), so
// 1 GiB of gzip takes about 1 MiB. Built once per process (a second or two).

#include <cstddef>
#include <cstdint>
#include <string>

#include <zlib.h>
#include <zstd.h>

namespace wheelrpc::test {

/// `size` zero bytes as one zstd frame that does not declare its size (so a
/// decoder learns it only by decoding), with a 1 MiB window.
inline std::string zstd_bomb(std::size_t size) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog, 20);
  const std::string zeros(1u << 20, '\0');
  std::string out(ZSTD_CStreamOutSize(), '\0');
  std::string frame;
  for (std::size_t done = 0; done < size;) {
    const std::size_t n = std::min(zeros.size(), size - done);
    done += n;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    const auto mode = done == size ? ZSTD_e_end : ZSTD_e_continue;
    for (;;) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      const std::size_t left = ZSTD_compressStream2(cctx, &o, &in, mode);
      frame.append(out.data(), o.pos);
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  }
  ZSTD_freeCCtx(cctx);
  return frame;
}

/// `size` zero bytes as a gzip member (its trailer declares the size, mod
/// 2^32) or, with `zlib_format`, as a zlib stream (gRPC's "deflate", which
/// declares nothing).
inline std::string deflate_bomb(std::size_t size, bool zlib_format = false) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, zlib_format ? 15 : 15 + 16, 9, Z_RLE);
  std::string zeros(1u << 20, '\0');
  std::string out(1u << 16, '\0');
  std::string stream;
  for (std::size_t done = 0; done < size;) {
    const std::size_t n = std::min(zeros.size(), size - done);
    done += n;
    z.next_in = reinterpret_cast<Bytef*>(zeros.data());
    z.avail_in = static_cast<uInt>(n);
    const int flush = done == size ? Z_FINISH : Z_NO_FLUSH;
    int rc = Z_OK;
    do {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      rc = deflate(&z, flush);
      stream.append(out.data(), out.size() - z.avail_out);
    } while (z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
  }
  deflateEnd(&z);
  return stream;
}

}  // namespace wheelrpc::test
