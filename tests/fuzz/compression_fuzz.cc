// libFuzzer target for the decompressors (compression.h): the first byte picks
// zstd, lz4, gzip or deflate (mod 4), the rest is the compressed payload.
// Beyond "no crash, no sanitizer report, no allocation past libFuzzer's limit"
// it checks:
//   - an error is corrupt_compression or decompressed_too_large, with an empty
//     output and a message;
//   - a success is within the output cap (1 MiB, or 1024:1 past 64 KiB);
//   - the output compresses and decompresses back to itself.
// Run it with scripts/fuzz.sh; the seeds (tests/fuzz/corpus/compression/) are
// written by compression_fuzz_seeds.cc.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <wheelrpc/transport/compression.h>
#include <wheelrpc/transport/errc.h>

namespace {

using namespace wheelrpc::transport;

#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

constexpr Compression kCodecs[] = {Compression::zstd, Compression::lz4, Compression::gzip, Compression::deflate};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Compression c = kCodecs[data[0] % std::size(kCodecs)];
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  DecompressLimits limits;
  limits.max_output = 1u << 20;
  limits.max_ratio = 1024;
  limits.ratio_floor = 64u << 10;

  std::string out = "stale";
  std::string why;
  const boost::system::error_code ec = decompress(c, in, limits, out, &why);
  if (ec) {
    FUZZ_CHECK(ec == errc::corrupt_compression || ec == errc::decompressed_too_large);
    FUZZ_CHECK(out.empty());
    FUZZ_CHECK(why.starts_with(std::string(to_string(c)) + ": "));
    return 0;
  }
  FUZZ_CHECK(out.size() <= limits.max_output);
  FUZZ_CHECK(out.size() <= std::max(limits.ratio_floor, in.size() * limits.max_ratio));

  std::string again;
  compress(c, out, 1, again);
  DecompressLimits no_ratio = limits;
  no_ratio.max_ratio = 0;  // what compresses well may pass 1024:1
  std::string back;
  FUZZ_CHECK(!decompress(c, again, no_ratio, back));
  FUZZ_CHECK(back == out);
  return 0;
}
