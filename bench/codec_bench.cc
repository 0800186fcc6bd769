/// rpc_bench's codec mode: what each compression algorithm and level costs
/// and saves on realistic payloads, without the network.
///
///   rpc_bench codec [--compression zstd:1,zstd:3,...] [--content json,proto]
///                   [--payload 4096,65536] [--duration 1] [--iterations N]
///
/// For each algorithm and level (`--compression`, repeated or a comma list;
/// default zstd:1, zstd:3, zstd:9, lz4:1, lz4:9, gzip:1, gzip:6, deflate:6),
/// each content (`--content`, payload_gen.h; default json and proto) and
/// each size (`--payload` bytes; default 4096 and 65536): the payload is
/// compressed once and decompressed once (the round trip must give it back:
/// field "check"), then compressed again and again for at least
/// `--duration` seconds (or exactly `--iterations` times), then decompressed
/// the same way, on one thread. The rates are of the uncompressed bytes
/// (1 MB = 10^6 bytes) per CPU second of that thread (its CPU-time clock),
/// as lzbench and zstd's own benchmark report them; a compression reuses
/// its output buffer, as the engine's per-thread scratch buffer does.
///
/// Fields: "compression" ("zstd:3"; the level as given, 0 = the
/// algorithm's default), "content", "payload_bytes", "compressed_bytes",
/// "ratio" (payload / compressed), "compress_mb_per_s",
/// "decompress_mb_per_s", "compress_us" and "decompress_us" (CPU per
/// payload), the iterations and CPU seconds of each loop, "check".

#include "codec_bench.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <system_error>
#include <string>
#include <vector>

#include <unistd.h>

#include <wheelrpc/transport/compression.h>

#include "bench_util.h"
#include "compression_flag.h"
#include "payload_gen.h"

namespace wheelrpc::bench {

namespace {

#ifndef WHEELRPC_BENCH_VERSION
#define WHEELRPC_BENCH_VERSION "0.1.0"
#endif

constexpr const char* kDefaultSpecs = "zstd:1,zstd:3,zstd:9,lz4:1,lz4:9,gzip:1,gzip:6,deflate:6";

/// Iterations and CPU seconds of one timed loop.
struct Loop {
  std::uint64_t iterations = 0;
  double cpu_s = 0;
};

/// Runs `step` until `duration_s` of wall time passed (at least once), or
/// exactly `iterations` times when that is not 0; CPU time of this thread.
template <class F>
Loop timed(double duration_s, std::uint64_t iterations, F&& step) {
  const pid_t tid = ::gettid();
  const std::int64_t end = now_ns() + static_cast<std::int64_t>(duration_s * 1e9);
  const double c0 = thread_cpu_s(tid);
  Loop loop;
  do {
    step();
    ++loop.iterations;
  } while (iterations ? loop.iterations < iterations : now_ns() < end);
  loop.cpu_s = thread_cpu_s(tid) - c0;
  return loop;
}

double mb_per_s(std::size_t bytes, const Loop& loop) {
  return loop.cpu_s > 0 ? static_cast<double>(bytes) * static_cast<double>(loop.iterations) / loop.cpu_s / 1e6 : -1;
}
double us_per(const Loop& loop) {
  return loop.iterations ? loop.cpu_s * 1e6 / static_cast<double>(loop.iterations) : -1;
}

/// One algorithm and level on one payload: its JSON line; false when the
/// round trip failed.
bool measure(const CompressionFlag& spec, Content content, const std::string& input, double duration_s,
             std::uint64_t iterations) {
  Check check;
  std::string compressed;
  transport::compress(spec.algorithm, input, spec.level, compressed);
  transport::DecompressLimits limits;
  limits.max_output = std::max<std::size_t>(input.size(), 1);
  limits.max_ratio = std::numeric_limits<std::uint32_t>::max();
  std::string output, why;
  const auto ec = transport::decompress(spec.algorithm, compressed, limits, output, &why);
  check.expect(!ec, "decompress failed: " + ec.message() + (why.empty() ? "" : ": " + why));
  check.expect(output == input, "the round trip changed the payload");

  std::string out;
  out.reserve(compressed.size() * 2 + 64);
  std::size_t sink = 0;  // keeps every result observable
  const Loop comp = timed(duration_s, iterations, [&] {
    out.clear();
    transport::compress(spec.algorithm, input, spec.level, out);
    sink += out.size();
  });
  const Loop decomp = timed(duration_s, iterations, [&] {
    transport::decompress(spec.algorithm, compressed, limits, output);
    sink += output.size();
  });
  check.expect(sink > 0 || input.empty(), "nothing was produced");

  JsonLine()
      .str("system", "wheelrpc")
      .str("version", WHEELRPC_BENCH_VERSION)
      .str("workload", "codec")
      .str("compression", spec.label())
      .str("algorithm", transport::to_string(spec.algorithm))
      .num("level", spec.level)
      .str("content", to_string(content))
      .num("payload_bytes", input.size())
      .num("compressed_bytes", compressed.size())
      .num("ratio",
           compressed.empty() ? -1.0 : static_cast<double>(input.size()) / static_cast<double>(compressed.size()), 3)
      .num("compress_mb_per_s", mb_per_s(input.size(), comp), 1)
      .num("decompress_mb_per_s", mb_per_s(input.size(), decomp), 1)
      .num("compress_us", us_per(comp), 2)
      .num("decompress_us", us_per(decomp), 2)
      .num("compress_iterations", comp.iterations)
      .num("decompress_iterations", decomp.iterations)
      .num("compress_cpu_s", comp.cpu_s, 3)
      .num("decompress_cpu_s", decomp.cpu_s, 3)
      .str("check", check.text())
      .print();
  return check.ok();
}

}  // namespace

int codec_bench(const Flags& flags) {
  flags.check_known({"compression", "content", "payload", "duration", "iterations"});
  std::vector<CompressionFlag> specs;
  std::vector<std::string> names = flags.list("compression");
  if (names.empty()) names = Flags::split(kDefaultSpecs);
  for (const auto& n : names) specs.push_back(parse_compression_flag(n));
  std::vector<Content> contents;
  std::vector<std::string> content_names = flags.list("content");
  if (content_names.empty()) content_names = {"json", "proto"};
  for (const auto& n : content_names) {
    const auto c = parse_content(n);
    if (!c) throw UsageError("--content takes fill|json|proto|random|zeros, got '" + n + "'");
    contents.push_back(*c);
  }
  std::vector<std::size_t> sizes;
  std::vector<std::string> size_names = flags.list("payload");
  if (size_names.empty()) size_names = {"4096", "65536"};
  for (const auto& n : size_names) {
    std::size_t v = 0;
    const auto [end, err] = std::from_chars(n.data(), n.data() + n.size(), v);
    if (err != std::errc() || end != n.data() + n.size() || v < 1 || v > (std::size_t{64} << 20)) {
      throw UsageError("--payload takes sizes in 1.." + std::to_string(std::size_t{64} << 20) + " bytes, got '" + n +
                       "'");
    }
    sizes.push_back(v);
  }
  const double duration_s = flags.seconds("duration", 1);
  const auto iterations = static_cast<std::uint64_t>(flags.integer("iterations", 0, 0, 1'000'000'000));

  bool ok = true;
  for (const Content content : contents) {
    for (const std::size_t size : sizes) {
      const std::string input = make_payload(content, size);
      for (const auto& spec : specs) ok = measure(spec, content, input, duration_s, iterations) && ok;
    }
  }
  return ok ? 0 : 1;
}

}  // namespace wheelrpc::bench
