// Writes the seed corpus of compression_fuzz: small valid payloads of each
// algorithm (the first byte selects it, as in the fuzz target), compressed by
// compress() at a few levels, and a few broken ones. The seeds are checked in
// under tests/fuzz/corpus/compression/; regenerate them with
//   build/fuzz/tests/fuzz/compression_fuzz_seeds tests/fuzz/corpus/compression
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>

#include <wheelrpc/transport/compression.h>

namespace {

using namespace wheelrpc::transport;

/// The fuzz target's selector byte for each algorithm (its index mod 4).
constexpr struct {
  Compression c;
  char selector;
} kCodecs[] = {{Compression::zstd, 0}, {Compression::lz4, 1}, {Compression::gzip, 2}, {Compression::deflate, 3}};

bool write(const std::string& dir, const std::string& name, std::string_view bytes) {
  const std::string path = dir + "/" + name + ".bin";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::string json = R"({"method":"echo.Echo","id":42,"payload":"hello hello hello hello"})";
  const std::string repeated(2000, 'a');
  bool ok = true;
  for (const auto& [c, selector] : kCodecs) {
    const std::string name(to_string(c));
    const std::string prefix(1, selector);
    std::string wire;
    compress(c, "", 0, wire);
    ok &= write(dir, name + "_empty", prefix + wire);
    wire.clear();
    compress(c, json, 0, wire);
    ok &= write(dir, name + "_json", prefix + wire);
    wire.clear();
    compress(c, repeated, 9, wire);
    ok &= write(dir, name + "_repeated", prefix + wire);
    // Broken: cut short, a byte flipped in the middle.
    wire.clear();
    compress(c, json, 0, wire);
    ok &= write(dir, name + "_truncated", prefix + wire.substr(0, wire.size() - 3));
    wire[wire.size() / 2] = static_cast<char>(wire[wire.size() / 2] ^ 0x20);
    ok &= write(dir, name + "_flipped", prefix + wire);
  }
  return ok ? 0 : 1;
}
